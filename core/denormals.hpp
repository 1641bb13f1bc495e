// Denormal floats flushed to zero in both engines' arithmetic.
#pragma once

namespace dbench::core {

/// Sets the calling thread's floating-point unit to flush denormal results to zero and to read denormal
/// inputs as zero (x86's FTZ and DAZ bits; elsewhere nothing). Threads it starts afterwards inherit it, so
/// each program calls it first in main. Training drives some weights, gradients and momenta below 1.2e-38,
/// where each operation on them costs tens to hundreds of cycles: without it the MLP's local step on 2
/// workers slowed from 82 to 214 us over 12 000 steps, and dbench train's from 92 to 103 us over 8 000
/// iterations, a cost that grows with training's progress, which no calibration of a few hundred
/// iterations predicts. The values lost are below any that training can resolve (as in TensorFlow's and
/// XLA's CPU kernels, which flush them too).
void flush_denormals() noexcept;

}  // namespace dbench::core
