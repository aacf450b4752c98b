// Where `strata` finds the model to load: the bundled default model relative
// to the executable (no path of the checkout is compiled in), and MODEL
// arguments that are paths or Hugging Face ids in the local HF cache.
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "model/loader/hub_cache.h"

namespace strata::app {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBundledModel = "strata-tiny";

bool has_model(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "config.json", ec);
}

fs::path executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  return fs::path(std::string(buf, static_cast<size_t>(n))).parent_path();
}

// The source tree of the build directory that holds `dir`, read from the
// CMakeCache.txt CMake left there ("" when `dir` is not in a build tree).
fs::path source_dir_of_build(fs::path dir) {
  for (int depth = 0; depth < 6 && !dir.empty(); ++depth, dir = dir.parent_path()) {
    std::ifstream cache(dir / "CMakeCache.txt");
    std::string line;
    const std::string key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    while (cache && std::getline(cache, line)) {
      if (line.rfind(key, 0) == 0) return line.substr(key.size());
    }
    if (dir == dir.parent_path()) break;
  }
  return {};
}

}  // namespace

std::string default_model_path() {
  const fs::path exe_dir = executable_dir();
  if (exe_dir.empty()) return "";
  // Installed: PREFIX/bin/strata and PREFIX/share/strata/models/strata-tiny.
  const fs::path installed = exe_dir.parent_path() / "share" / "strata" / "models" / kBundledModel;
  if (has_model(installed)) return installed.string();
  // Run from a build directory: the source tree's models/.
  const fs::path source = source_dir_of_build(exe_dir);
  if (!source.empty() && has_model(source / "models" / kBundledModel)) {
    return (source / "models" / kBundledModel).string();
  }
  return "";
}

std::string default_model_search_note() {
  const fs::path exe_dir = executable_dir();
  return "looked in " +
         (exe_dir.parent_path() / "share" / "strata" / "models" / kBundledModel).string() +
         " and the source tree of the build directory holding " + exe_dir.string();
}

StatusOr<std::string> locate_model(const std::string& model, const std::string& revision,
                                   const std::string& download_dir) {
  return model::resolve_model_location(
      {.model = model, .revision = revision, .download_dir = download_dir},
      model::HubEnvironment::from_process());
}

}  // namespace strata::app
