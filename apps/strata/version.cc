// `strata --version`: the version and how this binary was built.
#include "commands.h"
#include "ops/ops.h"
#include "strata_build_info.h"  // generated: STRATA_GIT_COMMIT

namespace strata::app {

std::string version_line() {
  return std::string("strata ") + STRATA_VERSION + " (commit " + STRATA_GIT_COMMIT + ", " +
         STRATA_COMPILER + ", CPU backend " + ops::cpu_backend_name() + ")";
}

}  // namespace strata::app
