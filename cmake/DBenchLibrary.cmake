# dbench_add_library(FOLDER [SHARED] SOURCES file... [PUBLIC dep...] [PRIVATE dep...]): the one library of a
# top-level folder, dbench_FOLDER with the alias dbench::FOLDER, its headers included as "FOLDER/x.hpp" from
# the project root. SHARED where the simulator's shared library and the programs that load it must use one
# copy (see sim/CMakeLists.txt).
function(dbench_add_library folder)
  cmake_parse_arguments(PARSE_ARGV 1 arg "SHARED" "" "SOURCES;PUBLIC;PRIVATE")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dbench_add_library(${folder}): unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(kind STATIC)
  if(arg_SHARED)
    set(kind SHARED)
  endif()
  set(target dbench_${folder})
  add_library(${target} ${kind} ${arg_SOURCES})
  add_library(dbench::${folder} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC ${arg_PUBLIC} PRIVATE ${arg_PRIVATE})
endfunction()
