// LibTorch's glog headers define CHECK (abort on failure); test files that include LibTorch use this header
// instead of <doctest/doctest.h> so that CHECK is doctest's counted assertion again.
#pragma once

#include <torch/torch.h>

#ifdef CHECK
#undef CHECK
#endif
#include <doctest/doctest.h>
#ifndef CHECK
#define CHECK(...) DOCTEST_CHECK(__VA_ARGS__)
#endif
