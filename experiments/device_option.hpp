// The --device option of dbench train, calibrate and validate: where dbench train's LibTorch worker runs.
#pragma once

#include <string>

namespace dbench::experiments {

/// True for "cuda" and "cuda:N".
bool on_gpu(const std::string& device);

/// Throws std::invalid_argument naming --device unless `device` is empty (the CPU workers), "cpu", "cuda" or
/// "cuda:N" and this build has what it needs (LibTorch; CUDA and NCCL for a GPU).
void check_device(const std::string& device);

/// The GPU that "cuda:N" names; -1 for "cuda" (the worker's local rank picks it).
int gpu_index(const std::string& device);

}  // namespace dbench::experiments
