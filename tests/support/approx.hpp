// Relative comparison of doubles. doctest::Approx passes |a - b| < epsilon * (1 + max(|a|, |b|)): for the
// seconds, shares and probabilities these tests compare, far below 1, that is an absolute tolerance of
// epsilon, which a time of 1e-4 s passes against any other of that size (6.8 ms matched 5.8 ms to
// "epsilon(0.02)"). approx() compares within epsilon of the larger magnitude, with a floor of epsilon x 1e-9
// so that a value computed as zero still matches zero. A comparison with zero itself, within an absolute
// tolerance, stays doctest::Approx(0.0).
#pragma once

#include <doctest/doctest.h>

namespace dbench::testing {

/// doctest::Approx(value), relative: chain .epsilon() as with doctest's.
inline doctest::Approx approx(double value) {
  return doctest::Approx(value).scale(1e-9);
}

}  // namespace dbench::testing
