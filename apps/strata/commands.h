// Sub-commands of the `strata` program. Each takes the arguments after its
// name and returns the process exit code.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace strata::app {

int run_generate(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);

// The bundled model: PREFIX/share/strata/models/strata-tiny beside an
// installed binary, else the source tree's models/strata-tiny when run from a
// build directory; "" when neither exists (default_model_search_note() says
// where it looked). Found at run time, relative to the executable.
std::string default_model_path();
std::string default_model_search_note();

// A MODEL argument as a path to load: `model` itself when it exists, else a
// Hugging Face id looked up in the local HF cache (model/loader/hub_cache.h);
// NotFound names where it looked. Never downloads.
StatusOr<std::string> locate_model(const std::string& model, const std::string& revision = "",
                                   const std::string& download_dir = "");

// "strata 0.1.0 (commit abc1234, g++ 12.2.0, CPU backend avx512_bf16+onednn)".
std::string version_line();

}  // namespace strata::app
