// --kernel-calibration off|auto|force for the commands that load a model
// (serve, generate, bench throughput): after the model is loaded, time the
// matmul kernels for the shapes it has and dispatch each shape class to the
// fastest (ops/kernel_calibration.h), cached under the user's cache directory.
//
// Used on the main thread during start-up only.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "flags.h"

namespace strata::app {

// Registers --kernel-calibration on `flags`; *mode defaults to
// $STRATA_KERNEL_CALIBRATION when set (the test suite sets "off"), else "auto".
void add_kernel_calibration_flag(FlagSet& flags, std::string* mode);

// Checks `mode` (InvalidArgument names the flag), calibrates the matmul
// shapes prepared so far (the loaded model's) with `pool`'s thread count,
// installs the choices and returns the lines describing them (one per shape
// class, then the total time and the cache file; warnings last).
StatusOr<std::vector<std::string>> calibrate_kernels(const std::string& mode, ThreadPool& pool);

}  // namespace strata::app
