// Sub-commands of the `strata` program. Each takes the arguments after its
// name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace strata::app {

int run_generate(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);

// The bundled default model directory (models/ in the source tree), or "" when
// the build has none.
std::string default_model_path();

}  // namespace strata::app
