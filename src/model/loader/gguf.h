// Reads GGUF files (llama.cpp's single-file format), versions 2 and 3,
// little-endian. The file is memory-mapped; tensor views point into it.
//
// Layout: magic "GGUF", u32 version, u64 tensor count, u64 metadata count,
// metadata (key string, u32 value type, value), tensor infos (name, u32 rank,
// u64 dims innermost-first, u32 ggml type, u64 offset), padding to
// general.alignment (default 32), tensor data.
//
// Presentation: tensor shapes are row-major, outermost first (GGUF's dims
// reversed), so a linear weight is [out_features, in_features] as in
// safetensors. Accepted tensor types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0,
// Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; others are an error
// naming the tensor and the type. Every count, length and offset is checked
// against the file size, so a corrupt file gives a Status, never a crash or a
// huge allocation. Metadata arrays are validated on open but decoded on demand
// (straight from the mapping), so a 150k-token vocabulary costs nothing until read.
//
// Operations: GgufFile::open (any thread), then const getters (thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor_view.h"

namespace strata::model {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);  // "UINT32", "ARRAY", ...
// ggml tensor type name ("Q4_K"), "type <id>" when unknown.
std::string ggml_type_name(uint32_t ggml_type);

// ggml type ids Strata reads.
constexpr uint32_t kGgmlTypeF32 = 0;
constexpr uint32_t kGgmlTypeF16 = 1;
constexpr uint32_t kGgmlTypeQ4_0 = 2;
constexpr uint32_t kGgmlTypeQ4_1 = 3;
constexpr uint32_t kGgmlTypeQ5_0 = 6;
constexpr uint32_t kGgmlTypeQ5_1 = 7;
constexpr uint32_t kGgmlTypeQ8_0 = 8;
constexpr uint32_t kGgmlTypeQ2_K = 10;
constexpr uint32_t kGgmlTypeQ3_K = 11;
constexpr uint32_t kGgmlTypeQ4_K = 12;
constexpr uint32_t kGgmlTypeQ5_K = 13;
constexpr uint32_t kGgmlTypeQ6_K = 14;
constexpr uint32_t kGgmlTypeIQ4_NL = 20;
constexpr uint32_t kGgmlTypeIQ4_XS = 23;
constexpr uint32_t kGgmlTypeBF16 = 30;

// An array value: where its elements lie in the file (decoded on demand).
struct GgufArrayRef {
  GgufValueType element_type = GgufValueType::kUint8;
  uint64_t length = 0;
  uint64_t offset_bytes = 0;  // first element, from the start of the file
};

// One metadata value. Unsigned ints are held as uint64_t, signed as int64_t,
// floats as double.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArrayRef> data;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t ggml_type = 0;
  std::vector<int64_t> gguf_dims;  // as stored: innermost first
  uint64_t offset_bytes = 0;       // from the start of the file
  tensor::TensorView view;         // row-major shape, data in the mapping
};

class GgufFile {
 public:
  static StatusOr<GgufFile> open(const std::string& path);
  // Parses an already mapped file (kept alive by the GgufFile).
  static StatusOr<GgufFile> parse(std::shared_ptr<MappedFile> file);

  const std::string& path() const { return file_->path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset_bytes() const { return data_offset_bytes_; }
  const std::shared_ptr<MappedFile>& mapping() const { return file_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  const GgufValue* find(const std::string& key) const;

  // Typed getters: missing key -> kNotFound, wrong type -> kInvalidArgument;
  // both name the file and the key. get_int accepts every integer type,
  // get_float both float types (and integers).
  StatusOr<std::string> get_string(const std::string& key) const;
  StatusOr<int64_t> get_int(const std::string& key) const;
  StatusOr<double> get_float(const std::string& key) const;
  StatusOr<bool> get_bool(const std::string& key) const;
  StatusOr<std::vector<std::string>> get_string_array(const std::string& key) const;
  StatusOr<std::vector<int64_t>> get_int_array(const std::string& key) const;
  StatusOr<std::vector<double>> get_float_array(const std::string& key) const;
  StatusOr<uint64_t> get_array_length(const std::string& key) const;
  // Absent key -> `fallback`; present with a wrong type -> error.
  StatusOr<int64_t> get_int_or(const std::string& key, int64_t fallback) const;
  StatusOr<double> get_float_or(const std::string& key, double fallback) const;

  // The elements of an array value (nested arrays stay GgufArrayRef).
  StatusOr<std::vector<GgufValue>> array_elements(const GgufArrayRef& array) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;

 private:
  class Parser;
  StatusOr<const GgufValue*> find_typed(const std::string& key) const;
  StatusOr<GgufArrayRef> find_array(const std::string& key) const;
  Status type_error(const std::string& key, const GgufValue& value, const char* expected) const;

  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_bytes_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_idx_;  // name -> index into tensors_
};

}  // namespace strata::model
