#include "kernel_calibration_flag.h"

#include <cstdlib>

#include "base/cpu_features.h"
#include "commands.h"
#include "ops/kernel_calibration.h"
#include "ops/matmul_choice.h"

namespace strata::app {

void add_kernel_calibration_flag(FlagSet& flags, std::string* mode) {
  const char* env = std::getenv("STRATA_KERNEL_CALIBRATION");
  *mode = env != nullptr && env[0] != '\0' ? env : "auto";
  flags.add_string("kernel-calibration", mode,
                   "matmul kernel choice at load: auto (measure once per CPU and binary, cached "
                   "in $XDG_CACHE_HOME/strata), force (always measure), off (static choice); "
                   "default $STRATA_KERNEL_CALIBRATION, else auto");
}

StatusOr<std::vector<std::string>> calibrate_kernels(const std::string& mode, ThreadPool& pool) {
  STRATA_ASSIGN_OR_RETURN(ops::CalibrationMode m, ops::parse_calibration_mode(mode));
  ops::CalibrationOptions options;
  options.mode = m;
  options.signature = cpu_signature() + " | " + version_line();
  options.cache_path = ops::default_calibration_cache_path(options.signature);
  options.threads = pool.num_threads();
  ops::CalibrationReport report =
      ops::calibrate_matmul_kernels(ops::prepared_matmul_shapes(), options,
                                    m == ops::CalibrationMode::kOff
                                        ? ops::MatmulTimer()
                                        : ops::make_matmul_timer(pool));
  ops::install_calibration(report);
  return ops::describe_calibration(report);
}

}  // namespace strata::app
