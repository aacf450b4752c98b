// Test helpers: build safetensors and GGUF files byte by byte in a temporary
// directory, so loader tests need no downloaded models. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/loader/gguf.h"

namespace strata::model::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its files at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& bytes);

// True when `status` has `code` and its message contains every one of `parts`
// (so tests check that errors name the file and the tensor or field).
::testing::AssertionResult has_error(const Status& status, StatusCode code,
                                     const std::vector<std::string>& parts);

template <typename T>
std::string le_bytes(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

std::string f32_bytes(const std::vector<float>& values);
std::string f16_bytes(const std::vector<float>& values);
std::string bf16_bytes(const std::vector<float>& values);
std::string q8_0_bytes(const std::vector<float>& values);  // size % 32 == 0
// Deterministic values in [-1, 1): a fixed LCG seeded by `seed`.
std::vector<float> test_values(int64_t n, uint32_t seed);

// --- safetensors ------------------------------------------------------------
struct StTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;
  std::string bytes;
};
// Header (padded with spaces to 8 bytes) then the tensors' bytes in order.
std::string build_safetensors(const std::vector<StTensor>& tensors);
// A file with an arbitrary header object and data (for corrupt-file tests).
std::string build_safetensors_raw(const nlohmann::json& header, const std::string& data);

// --- GGUF -------------------------------------------------------------------
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  template <typename T>
  void add_scalar(const std::string& key, GgufValueType type, T value) {
    add_raw(key, type, le_bytes(value));
  }
  void add_string(const std::string& key, const std::string& value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  template <typename T>
  void add_array(const std::string& key, GgufValueType element_type, const std::vector<T>& v) {
    std::string payload;
    for (const T& x : v) payload += le_bytes(x);
    add_raw(key, GgufValueType::kArray, array_header(element_type, v.size()) + payload);
  }
  // `value_bytes` is the encoded value (for arrays: element type, length, elements).
  void add_raw(const std::string& key, GgufValueType type, const std::string& value_bytes);
  static std::string array_header(GgufValueType element_type, uint64_t length);
  static std::string gguf_string(const std::string& s);

  // `shape` is row-major (outermost first); it is written innermost first.
  void add_tensor(const std::string& name, uint32_t ggml_type, const std::vector<int64_t>& shape,
                  const std::string& bytes);

  // Writes `offset` as tensor `idx`'s offset instead of the computed one.
  void override_offset(size_t idx, uint64_t offset) { tensors_.at(idx).offset = offset; }

  // Whole file; tensors placed in order at multiples of `alignment`.
  std::string build(uint64_t alignment = 32) const;
  // Offset of the tensor data section in the built file.
  uint64_t data_offset(uint64_t alignment = 32) const;

 private:
  struct Tensor {
    std::string name;
    uint32_t ggml_type;
    std::vector<int64_t> shape;
    std::string bytes;
    int64_t offset = -1;  // -1: computed
  };
  std::string header_and_infos(uint64_t alignment) const;

  uint32_t version_;
  uint64_t num_kvs_ = 0;
  std::string kv_bytes_;
  std::vector<Tensor> tensors_;
};

// --- tiny models --------------------------------------------------------------
// 2 layers, hidden 64, intermediate 96, 4 heads, 2 kv heads, head_dim 16, vocab 32.
struct TinyShape {
  int64_t vocab = 32, hidden = 64, intermediate = 96, layers = 2, heads = 4, kv_heads = 2,
          head_dim = 16;
};

// A Hugging Face config.json for `arch` ("LlamaForCausalLM", ...).
nlohmann::json tiny_hf_config(const std::string& arch, const TinyShape& s = {});
// The HF-named tensors of a tiny model (F32), with biases / q,k norms as `arch` needs.
std::vector<StTensor> tiny_hf_tensors(const std::string& arch, const TinyShape& s = {});
// A GGUF of a tiny model: metadata for `arch` ("llama", "qwen2", "qwen3") and
// tensors under GGUF names (F32; ggml_type for the linear weights).
GgufWriter tiny_gguf(const std::string& arch, uint32_t linear_type = kGgmlTypeF32,
                     bool with_output = true, const TinyShape& s = {});

}  // namespace strata::model::testing
