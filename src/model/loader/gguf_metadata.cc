// GgufFile's typed metadata getters and the type-name tables.
#include <limits>

#include "model/loader/gguf.h"
#include "model/loader/gguf_reader.h"

namespace strata::model {
namespace {

bool is_int(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool is_float(GgufValueType t) {
  return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64;
}

// An integer value as int64 (false when a uint64 exceeds INT64_MAX).
bool to_int64(const GgufValue& v, int64_t* out) {
  if (const auto* s = std::get_if<int64_t>(&v.data)) {
    *out = *s;
    return true;
  }
  const auto* u = std::get_if<uint64_t>(&v.data);
  if (u == nullptr || *u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  *out = static_cast<int64_t>(*u);
  return true;
}

double to_double(const GgufValue& v) {
  if (const auto* d = std::get_if<double>(&v.data)) return *d;
  if (const auto* s = std::get_if<int64_t>(&v.data)) return static_cast<double>(*s);
  return static_cast<double>(std::get<uint64_t>(v.data));
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  static constexpr const char* kNames[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                           "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                           "UINT64", "INT64",   "FLOAT64"};
  const auto idx = static_cast<uint32_t>(type);
  return idx < std::size(kNames) ? kNames[idx] : "UNKNOWN";
}

std::string ggml_type_name(uint32_t ggml_type) {
  // ggml's type ids; gaps are ids ggml has retired.
  static constexpr const char* kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  nullptr,  nullptr, "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16",  nullptr,
      nullptr,   nullptr,  "TQ1_0",   "TQ2_0", nullptr,  nullptr, nullptr, "MXFP4"};
  if (ggml_type < std::size(kNames) && kNames[ggml_type] != nullptr) return kNames[ggml_type];
  return "type " + std::to_string(ggml_type);
}

StatusOr<std::string> GgufFile::get_string(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(const GgufValue* v, find_typed(key));
  if (v->type != GgufValueType::kString) return type_error(key, *v, "a string");
  return std::get<std::string>(v->data);
}

StatusOr<int64_t> GgufFile::get_int(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(const GgufValue* v, find_typed(key));
  if (!is_int(v->type)) return type_error(key, *v, "an integer");
  int64_t out = 0;
  if (!to_int64(*v, &out)) {
    return out_of_range(path() + ": metadata key '" + key +
                        "' = " + std::to_string(std::get<uint64_t>(v->data)) + " exceeds int64");
  }
  return out;
}

StatusOr<double> GgufFile::get_float(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(const GgufValue* v, find_typed(key));
  if (!is_float(v->type) && !is_int(v->type)) return type_error(key, *v, "a number");
  return to_double(*v);
}

StatusOr<bool> GgufFile::get_bool(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(const GgufValue* v, find_typed(key));
  if (v->type != GgufValueType::kBool) return type_error(key, *v, "a bool");
  return std::get<bool>(v->data);
}

StatusOr<int64_t> GgufFile::get_int_or(const std::string& key, int64_t fallback) const {
  return has(key) ? get_int(key) : StatusOr<int64_t>(fallback);
}

StatusOr<double> GgufFile::get_float_or(const std::string& key, double fallback) const {
  return has(key) ? get_float(key) : StatusOr<double>(fallback);
}

StatusOr<GgufArrayRef> GgufFile::find_array(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(const GgufValue* v, find_typed(key));
  if (v->type != GgufValueType::kArray) return type_error(key, *v, "an array");
  return std::get<GgufArrayRef>(v->data);
}

StatusOr<uint64_t> GgufFile::get_array_length(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(GgufArrayRef array, find_array(key));
  return array.length;
}

StatusOr<std::vector<std::string>> GgufFile::get_string_array(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(GgufArrayRef array, find_array(key));
  if (array.element_type != GgufValueType::kString) {
    return type_error(key, *find(key), "an array of strings");
  }
  internal::ByteReader r(file_->data(), file_->size_bytes(), file_->path());
  r.seek(array.offset_bytes);
  std::vector<std::string> out(array.length);  // length was bounded by the file on open
  for (std::string& s : out) STRATA_RETURN_IF_ERROR(r.read_string(&s, "a string element"));
  return out;
}

StatusOr<std::vector<int64_t>> GgufFile::get_int_array(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(GgufArrayRef array, find_array(key));
  if (!is_int(array.element_type)) return type_error(key, *find(key), "an array of integers");
  STRATA_ASSIGN_OR_RETURN(std::vector<GgufValue> values, array_elements(array));
  std::vector<int64_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!to_int64(values[i], &out[i])) {
      return out_of_range(path() + ": metadata key '" + key + "' element " + std::to_string(i) +
                          " exceeds int64");
    }
  }
  return out;
}

StatusOr<std::vector<double>> GgufFile::get_float_array(const std::string& key) const {
  STRATA_ASSIGN_OR_RETURN(GgufArrayRef array, find_array(key));
  if (!is_float(array.element_type) && !is_int(array.element_type)) {
    return type_error(key, *find(key), "an array of numbers");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<GgufValue> values, array_elements(array));
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = to_double(values[i]);
  return out;
}

}  // namespace strata::model
