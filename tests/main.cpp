// The single doctest main shared by every DBench test executable. The tests compute as dbench does: with
// denormal floats flushed (core::flush_denormals), so that in-process results match the command's.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "core/denormals.hpp"

int main(int argc, char** argv) {
  dbench::core::flush_denormals();
  return doctest::Context(argc, argv).run();
}
