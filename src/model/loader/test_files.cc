#include "model/loader/test_files.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/check.h"
#include "tensor/dtype.h"

namespace strata::model::testing {

TempDir::TempDir() {
  // $TMPDIR, else RAM-backed /dev/shm (the truncation tests write hundreds of
  // small files), else /tmp.
  const char* env = std::getenv("TMPDIR");
  std::string base = env != nullptr && *env != '\0'    ? env
                     : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                       : "/tmp";
  std::string templ = base + "/strata_loader_XXXXXX";
  STRATA_CHECK(::mkdtemp(templ.data()) != nullptr) << "mkdtemp failed for " << templ;
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  STRATA_CHECK(out.good()) << "cannot write " << path;
}

::testing::AssertionResult has_error(const Status& status, StatusCode code,
                                     const std::vector<std::string>& parts) {
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected " << status_code_name(code) << ", got " << status.to_string();
  }
  for (const std::string& part : parts) {
    if (status.message().find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message lacks '" << part << "': " << status.to_string();
    }
  }
  return ::testing::AssertionSuccess();
}

std::string f32_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += le_bytes(v);
  return out;
}

std::string f16_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += le_bytes(tensor::f32_to_f16(v));
  return out;
}

std::string bf16_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) out += le_bytes(tensor::f32_to_bf16(v));
  return out;
}

std::string q8_0_bytes(const std::vector<float>& values) {
  std::vector<tensor::BlockQ8_0> blocks(values.size() / tensor::kQ8_0BlockSize);
  tensor::quantize_q8_0(values.data(), static_cast<int64_t>(values.size()), blocks.data());
  return std::string(reinterpret_cast<const char*>(blocks.data()),
                     blocks.size() * sizeof(tensor::BlockQ8_0));
}

std::vector<float> test_values(int64_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t state = seed * 2654435761u + 12345u;
  for (float& v : out) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return out;
}

std::string build_safetensors_raw(const nlohmann::json& header, const std::string& data) {
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  return le_bytes(static_cast<uint64_t>(text.size())) + text + data;
}

std::string build_safetensors(const std::vector<StTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::string data;
  for (const StTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  return build_safetensors_raw(header, data);
}

std::string GgufWriter::gguf_string(const std::string& s) {
  return le_bytes(static_cast<uint64_t>(s.size())) + s;
}

std::string GgufWriter::array_header(GgufValueType element_type, uint64_t length) {
  return le_bytes(static_cast<uint32_t>(element_type)) + le_bytes(length);
}

void GgufWriter::add_raw(const std::string& key, GgufValueType type,
                         const std::string& value_bytes) {
  kv_bytes_ += gguf_string(key) + le_bytes(static_cast<uint32_t>(type)) + value_bytes;
  ++num_kvs_;
}

void GgufWriter::add_string(const std::string& key, const std::string& value) {
  add_raw(key, GgufValueType::kString, gguf_string(value));
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::string payload = array_header(GgufValueType::kString, v.size());
  for (const std::string& s : v) payload += gguf_string(s);
  add_raw(key, GgufValueType::kArray, payload);
}

void GgufWriter::add_tensor(const std::string& name, uint32_t ggml_type,
                            const std::vector<int64_t>& shape, const std::string& bytes) {
  tensors_.push_back({name, ggml_type, shape, bytes, -1});
}

static uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

std::string GgufWriter::header_and_infos(uint64_t alignment) const {
  std::string out = "GGUF" + le_bytes(version_) + le_bytes(static_cast<uint64_t>(tensors_.size())) +
                    le_bytes(num_kvs_) + kv_bytes_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    out += gguf_string(t.name) + le_bytes(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      out += le_bytes(static_cast<uint64_t>(*it));
    }
    out +=
        le_bytes(t.ggml_type) + le_bytes(t.offset >= 0 ? static_cast<uint64_t>(t.offset) : offset);
    offset = align_up(offset + t.bytes.size(), alignment);
  }
  return out;
}

uint64_t GgufWriter::data_offset(uint64_t alignment) const {
  return align_up(header_and_infos(alignment).size(), alignment);
}

std::string GgufWriter::build(uint64_t alignment) const {
  std::string out = header_and_infos(alignment);
  for (const Tensor& t : tensors_) {
    out.resize(align_up(out.size(), alignment), '\0');
    out += t.bytes;
  }
  return out;
}

}  // namespace strata::model::testing
