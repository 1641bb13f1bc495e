// DBENCH_MPI_CHECK: every MPI call goes through it, so a failure becomes a CommError naming the call.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

#include "runtime/errors.hpp"

namespace dbench::runtime::detail {

/// Throws CommError naming `call` and MPI's reason unless `code` is MPI_SUCCESS.
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) {
    return;
  }
  char reason[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, reason, &length) != MPI_SUCCESS) {
    length = 0;
  }
  throw CommError(std::string(call) + " failed: " + std::string(reason, static_cast<std::size_t>(length)));
}

/// check_mpi for places that must not throw (destructors): the failure goes to stderr as a warning.
inline void warn_mpi(int code, const char* call) noexcept {
  try {
    check_mpi(code, call);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dbench: warning: %s\n", e.what());
  }
}

}  // namespace dbench::runtime::detail

/// Calls an MPI function and throws dbench::runtime::CommError when it does not return MPI_SUCCESS.
#define DBENCH_MPI_CHECK(call) ::dbench::runtime::detail::check_mpi((call), #call)
/// DBENCH_MPI_CHECK where throwing is not allowed (destructors): a failure is reported on stderr.
#define DBENCH_MPI_CHECK_NOTHROW(call) ::dbench::runtime::detail::warn_mpi((call), #call)
