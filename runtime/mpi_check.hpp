// DBENCH_MPI_CHECK: every MPI call goes through it, so a failure becomes a CommError naming the call.
#pragma once

#include <mpi.h>

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

}  // namespace dbench::runtime::detail

/// Calls an MPI function and throws dbench::runtime::CommError when it does not return MPI_SUCCESS.
#define DBENCH_MPI_CHECK(call) ::dbench::runtime::detail::check_mpi((call), #call)
