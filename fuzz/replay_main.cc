// Corpus replay driver for gcc builds (no libFuzzer): runs
// LLVMFuzzerTestOneInput once on every file named on the command line and on
// every regular file under each directory named, in sorted order. A target
// that crashes or aborts fails the ctest; a clean run exits 0.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> collect_inputs(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    const std::filesystem::path root(argv[arg_idx]);
    if (!std::filesystem::is_directory(root)) {
      inputs.push_back(root);
      continue;
    }
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::filesystem::path> inputs = collect_inputs(argc, argv);
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs under the given paths\n");
    return 1;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs ran without a crash\n", inputs.size());
  return 0;
}
