// Fuzz target: model.safetensors.index.json, the file that maps each tensor
// of a sharded checkpoint to the shard that holds it. The input is the index;
// it sits in a scratch directory next to fixed shards (two valid ones, one
// truncated, one directory), so shard names that resolve, fail to open, fail
// to parse or lack the named tensor all happen.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/loader/safetensors.h"

namespace {

namespace fs = std::filesystem;

// A minimal safetensors file: F32 tensors of 2 elements each, named `names`.
std::string safetensors_bytes(std::initializer_list<const char*> names) {
  std::string header = "{";
  size_t offset = 0;
  for (const char* name : names) {
    if (header.size() > 1) header += ",";
    header += std::string("\"") + name + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + 8) + "]}";
    offset += 8;
  }
  header += "}";
  while (header.size() % 8 != 0) header += " ";
  std::string file(8, '\0');
  uint64_t length = header.size();
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) file[byte_idx] = char(length >> (8 * byte_idx));
  return file + header + std::string(offset, '\x01');
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::perror(("fuzz_safetensors_index: write " + path.string()).c_str());
    std::abort();
  }
}

// The scratch directory with its shards; removed when the process exits.
class ShardDir {
 public:
  ShardDir() {
    std::string pattern = (fs::temp_directory_path() / "strata-fuzz-index-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("fuzz_safetensors_index: mkdtemp");
      std::abort();
    }
    dir_ = pattern;
    write(dir_ / "model-00001-of-00002.safetensors", safetensors_bytes({"a", "b"}));
    write(dir_ / "model-00002-of-00002.safetensors", safetensors_bytes({"c"}));
    const std::string whole = safetensors_bytes({"d"});
    write(dir_ / "truncated.safetensors", whole.substr(0, whole.size() - 5));
    fs::create_directory(dir_ / "a_directory");
    index_path_ = (dir_ / "model.safetensors.index.json").string();
  }
  ~ShardDir() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  const std::string& write_index(const uint8_t* data, size_t size) {
    write(index_path_, std::string(reinterpret_cast<const char*>(data), size));
    return index_path_;
  }

 private:
  fs::path dir_;
  std::string index_path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ShardDir shards;
  (void)strata::model::open_safetensors_index(shards.write_index(data, size));
  return 0;
}
