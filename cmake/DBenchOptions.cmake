# Optional parts are tri-state: AUTO uses what is installed, ON makes a missing part a configure error,
# OFF never looks for it.
set(DBENCH_WITH_TORCH AUTO CACHE STRING "LibTorch models and training (AUTO|ON|OFF)")
set(DBENCH_WITH_MPI AUTO CACHE STRING "OpenMPI launcher and CPU transport (AUTO|ON|OFF)")
set(DBENCH_WITH_CUDA AUTO CACHE STRING "CUDA runtime and NCCL GPU transport (AUTO|ON|OFF)")
foreach(opt DBENCH_WITH_TORCH DBENCH_WITH_MPI DBENCH_WITH_CUDA)
  set_property(CACHE ${opt} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${opt}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${opt}=${${opt}}: expected AUTO, ON or OFF")
  endif()
  set(${opt} "${value}" CACHE STRING "" FORCE)
endforeach()

option(DBENCH_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer (forces Torch OFF)" OFF)
option(DBENCH_BUILD_BENCH "Build the benchmarks in bench/" ON)

if(DBENCH_SANITIZE AND NOT DBENCH_WITH_TORCH STREQUAL "OFF")
  message(STATUS "DBench: sanitizer build, LibTorch parts left out")
  set(DBENCH_WITH_TORCH OFF CACHE STRING "" FORCE)
endif()

find_program(DBENCH_CCACHE ccache)
if(DBENCH_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  # Paths relative to the source tree, so that another clone (CI's) hits the same cache entries.
  set(launcher "${CMAKE_COMMAND}" -E env "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=1 "${DBENCH_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER ${launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${launcher})
endif()

# dbench_require(OPTION FOUND WHAT): fail when a forced-ON part is missing, saying what to install.
function(dbench_require opt found what)
  if(${opt} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "${opt}=ON but ${what}")
  endif()
endfunction()
