#include "model/loader/gguf.h"

#include <limits>
#include <utility>

#include "model/loader/gguf_reader.h"

namespace strata::model {
namespace {

using internal::ByteReader;

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr int kMaxArrayDepth = 8;            // nested arrays deeper than this are corrupt
constexpr uint32_t kMaxTensorRank = 4;       // ggml's GGML_MAX_DIMS
constexpr uint32_t kLastValueType = 12;

// Encoded size of a fixed-size value type; 0 for string and array.
uint64_t scalar_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

// Smallest encoding of one element: strings and arrays carry a length prefix.
uint64_t min_element_bytes(GgufValueType type) {
  if (type == GgufValueType::kString) return 8;
  if (type == GgufValueType::kArray) return 12;
  return scalar_bytes(type);
}

template <typename Stored, typename Raw>
Status read_as(ByteReader& r, GgufValue* out) {
  Raw raw{};
  STRATA_RETURN_IF_ERROR(r.read(&raw, "a metadata value"));
  out->data = static_cast<Stored>(raw);
  return Status();
}

Status read_value(ByteReader& r, GgufValueType type, int depth, GgufValue* out);

// Validates an array's elements (walking strings and nested arrays) and
// records where they lie.
Status read_array(ByteReader& r, int depth, GgufArrayRef* out) {
  uint32_t type = 0;
  STRATA_RETURN_IF_ERROR(r.read(&type, "an array element type"));
  if (type > kLastValueType) {
    return data_loss(r.path() + ": unknown array element type " + std::to_string(type) +
                     " at byte " + std::to_string(r.pos() - 4));
  }
  if (depth >= kMaxArrayDepth) {
    return data_loss(r.path() + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  }
  out->element_type = static_cast<GgufValueType>(type);
  STRATA_RETURN_IF_ERROR(r.read(&out->length, "an array length"));
  out->offset_bytes = r.pos();
  const uint64_t fixed = scalar_bytes(out->element_type);
  if (fixed != 0) return r.skip(out->length, fixed, "array elements");
  // Cheap bound first so a huge length fails at once.
  uint64_t min_total = 0;
  if (__builtin_mul_overflow(out->length, min_element_bytes(out->element_type), &min_total) ||
      min_total > r.remaining()) {
    return r.truncated("array of " + std::to_string(out->length) + " elements", min_total);
  }
  GgufValue element;
  for (uint64_t i = 0; i < out->length; ++i) {
    STRATA_RETURN_IF_ERROR(read_value(r, out->element_type, depth + 1, &element));
  }
  return Status();
}

Status read_value(ByteReader& r, GgufValueType type, int depth, GgufValue* out) {
  out->type = type;
  switch (type) {
    case GgufValueType::kUint8:
      return read_as<uint64_t, uint8_t>(r, out);
    case GgufValueType::kInt8:
      return read_as<int64_t, int8_t>(r, out);
    case GgufValueType::kUint16:
      return read_as<uint64_t, uint16_t>(r, out);
    case GgufValueType::kInt16:
      return read_as<int64_t, int16_t>(r, out);
    case GgufValueType::kUint32:
      return read_as<uint64_t, uint32_t>(r, out);
    case GgufValueType::kInt32:
      return read_as<int64_t, int32_t>(r, out);
    case GgufValueType::kUint64:
      return read_as<uint64_t, uint64_t>(r, out);
    case GgufValueType::kInt64:
      return read_as<int64_t, int64_t>(r, out);
    case GgufValueType::kFloat32:
      return read_as<double, float>(r, out);
    case GgufValueType::kFloat64:
      return read_as<double, double>(r, out);
    case GgufValueType::kBool:
      return read_as<bool, uint8_t>(r, out);
    case GgufValueType::kString: {
      std::string s;
      STRATA_RETURN_IF_ERROR(r.read_string(&s, "a string value"));
      out->data = std::move(s);
      return Status();
    }
    case GgufValueType::kArray: {
      GgufArrayRef array;
      STRATA_RETURN_IF_ERROR(read_array(r, depth, &array));
      out->data = array;
      return Status();
    }
  }
  return data_loss(r.path() + ": unknown metadata value type " +
                   std::to_string(static_cast<uint32_t>(type)));
}

StatusOr<tensor::DType> tensor_dtype(uint32_t ggml_type, const std::string& path,
                                     const std::string& name) {
  switch (ggml_type) {
    case kGgmlTypeF32:
      return tensor::DType::kF32;
    case kGgmlTypeF16:
      return tensor::DType::kF16;
    case kGgmlTypeBF16:
      return tensor::DType::kBF16;
    case kGgmlTypeQ8_0:
      return tensor::DType::kQ8_0;
    case kGgmlTypeQ4_0:
      return tensor::DType::kQ4_0;
    case kGgmlTypeQ4_1:
      return tensor::DType::kQ4_1;
    case kGgmlTypeQ5_0:
      return tensor::DType::kQ5_0;
    case kGgmlTypeQ5_1:
      return tensor::DType::kQ5_1;
    case kGgmlTypeQ2_K:
      return tensor::DType::kQ2_K;
    case kGgmlTypeQ3_K:
      return tensor::DType::kQ3_K;
    case kGgmlTypeQ4_K:
      return tensor::DType::kQ4_K;
    case kGgmlTypeQ5_K:
      return tensor::DType::kQ5_K;
    case kGgmlTypeQ6_K:
      return tensor::DType::kQ6_K;
    case kGgmlTypeIQ4_NL:
      return tensor::DType::kIQ4_NL;
    case kGgmlTypeIQ4_XS:
      return tensor::DType::kIQ4_XS;
    default:
      return unimplemented(path + ": tensor '" + name + "' has type " + ggml_type_name(ggml_type) +
                           "; Strata reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, "
                           "Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS GGUF tensors");
  }
}

}  // namespace

// Walks the file once, filling a GgufFile; all bounds are checked here.
class GgufFile::Parser {
 public:
  explicit Parser(GgufFile* out)
      : out_(out), r_(out->file_->data(), out->file_->size_bytes(), out->file_->path()) {}

  Status run() {
    uint64_t num_tensors = 0, num_kvs = 0;
    STRATA_RETURN_IF_ERROR(read_header(&num_tensors, &num_kvs));
    STRATA_RETURN_IF_ERROR(read_metadata(num_kvs));
    STRATA_RETURN_IF_ERROR(read_alignment());
    STRATA_RETURN_IF_ERROR(read_tensor_infos(num_tensors));
    return place_tensors();
  }

 private:
  const std::string& path() const { return r_.path(); }

  Status read_header(uint64_t* num_tensors, uint64_t* num_kvs) {
    uint32_t magic = 0;
    STRATA_RETURN_IF_ERROR(r_.read(&magic, "the GGUF magic"));
    if (magic != kGgufMagic) return invalid_argument(path() + ": not a GGUF file (bad magic)");
    STRATA_RETURN_IF_ERROR(r_.read(&out_->version_, "the GGUF version"));
    const uint32_t v = out_->version_;
    if ((v & 0xffffu) == 0 && v != 0) {
      return unimplemented(path() + ": big-endian GGUF files are not supported");
    }
    if (v != 2 && v != 3) {
      return unimplemented(path() + ": GGUF version " + std::to_string(v) +
                           " is not supported; Strata reads versions 2 and 3");
    }
    STRATA_RETURN_IF_ERROR(r_.read(num_tensors, "the tensor count"));
    STRATA_RETURN_IF_ERROR(r_.read(num_kvs, "the metadata count"));
    // Each metadata pair takes >= 13 bytes and each tensor info >= 24.
    if (*num_kvs > r_.remaining() / 13 || *num_tensors > r_.remaining() / 24) {
      return data_loss(path() + ": header claims " + std::to_string(*num_kvs) +
                       " metadata pairs and " + std::to_string(*num_tensors) +
                       " tensors, more than the file can hold (corrupt or truncated)");
    }
    return Status();
  }

  Status read_metadata(uint64_t num_kvs) {
    for (uint64_t i = 0; i < num_kvs; ++i) {
      std::string key;
      uint32_t type = 0;
      STRATA_RETURN_IF_ERROR(r_.read_string(&key, "a metadata key"));
      STRATA_RETURN_IF_ERROR(r_.read(&type, "a metadata value type"));
      if (type > kLastValueType) {
        return data_loss(path() + ": metadata key '" + key + "' has unknown value type " +
                         std::to_string(type));
      }
      GgufValue value;
      STRATA_RETURN_IF_ERROR(read_value(r_, static_cast<GgufValueType>(type), 0, &value)
                                 .with_prefix("metadata key '" + key + "'"));
      if (!out_->metadata_.emplace(key, std::move(value)).second) {
        return data_loss(path() + ": metadata key '" + key + "' appears twice");
      }
    }
    return Status();
  }

  Status read_alignment() {
    if (!out_->has("general.alignment")) return Status();
    STRATA_ASSIGN_OR_RETURN(int64_t alignment, out_->get_int("general.alignment"));
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0 || alignment > (1 << 30)) {
      return data_loss(path() + ": general.alignment " + std::to_string(alignment) +
                       " is not a power of two");
    }
    out_->alignment_ = static_cast<uint64_t>(alignment);
    return Status();
  }

  Status read_tensor_infos(uint64_t num_tensors) {
    out_->tensors_.reserve(num_tensors);  // bounded by the file size in read_header
    for (uint64_t i = 0; i < num_tensors; ++i) {
      GgufTensorInfo info;
      STRATA_RETURN_IF_ERROR(read_tensor_info(&info));
      if (!out_->tensor_idx_.emplace(info.name, out_->tensors_.size()).second) {
        return data_loss(path() + ": tensor '" + info.name + "' appears twice");
      }
      out_->tensors_.push_back(std::move(info));
    }
    return Status();
  }

  Status read_tensor_info(GgufTensorInfo* info) {
    uint32_t rank = 0;
    STRATA_RETURN_IF_ERROR(r_.read_string(&info->name, "a tensor name"));
    STRATA_RETURN_IF_ERROR(r_.read(&rank, "a tensor rank"));
    if (rank == 0 || rank > kMaxTensorRank) {
      return data_loss(path() + ": tensor '" + info->name + "' has rank " + std::to_string(rank) +
                       "; expected 1 to 4");
    }
    for (uint32_t d = 0; d < rank; ++d) {
      uint64_t dim = 0;
      STRATA_RETURN_IF_ERROR(r_.read(&dim, "a tensor dimension"));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return data_loss(path() + ": tensor '" + info->name + "' has dimension " +
                         std::to_string(dim));
      }
      info->gguf_dims.push_back(static_cast<int64_t>(dim));
    }
    STRATA_RETURN_IF_ERROR(r_.read(&info->ggml_type, "a tensor type"));
    STRATA_RETURN_IF_ERROR(r_.read(&info->offset_bytes, "a tensor offset"));
    STRATA_ASSIGN_OR_RETURN(info->view.dtype, tensor_dtype(info->ggml_type, path(), info->name));
    info->view.shape.assign(info->gguf_dims.rbegin(), info->gguf_dims.rend());
    return Status();
  }

  // Bytes of one tensor; errors on overflow or a row not made of whole blocks.
  StatusOr<uint64_t> tensor_bytes(const GgufTensorInfo& info) const {
    int64_t n = 1;
    for (int64_t d : info.gguf_dims) {
      if (__builtin_mul_overflow(n, d, &n)) {
        return data_loss(path() + ": tensor '" + info.name + "' has too many elements");
      }
    }
    const int64_t block = tensor::dtype_block_size(info.view.dtype);
    if (info.gguf_dims[0] % block != 0) {
      return data_loss(path() + ": tensor '" + info.name + "' of type " +
                       ggml_type_name(info.ggml_type) + " has rows of " +
                       std::to_string(info.gguf_dims[0]) + " values, not a multiple of " +
                       std::to_string(block));
    }
    int64_t bytes = 0;
    if (__builtin_mul_overflow(n / block, tensor::dtype_block_bytes(info.view.dtype), &bytes)) {
      return data_loss(path() + ": tensor '" + info.name + "' is too large");
    }
    return static_cast<uint64_t>(bytes);
  }

  Status place_tensors() {
    const uint64_t align = out_->alignment_;
    const uint64_t size = out_->file_->size_bytes();
    const uint64_t data_start = (r_.pos() + align - 1) / align * align;
    out_->data_offset_bytes_ = data_start;
    for (GgufTensorInfo& info : out_->tensors_) {
      STRATA_ASSIGN_OR_RETURN(uint64_t bytes, tensor_bytes(info));
      const uint64_t rel = info.offset_bytes;
      if (rel % align != 0) {
        return data_loss(path() + ": tensor '" + info.name + "' offset " + std::to_string(rel) +
                         " is not a multiple of the alignment " + std::to_string(align));
      }
      if (data_start > size || rel > size - data_start || bytes > size - data_start - rel) {
        return data_loss(path() + ": tensor '" + info.name + "' data [" + std::to_string(rel) +
                         ", +" + std::to_string(bytes) + ") lies past the end of the file (" +
                         std::to_string(size) + " bytes; truncated?)");
      }
      info.offset_bytes = data_start + rel;
      info.view.data = out_->file_->data() + info.offset_bytes;
    }
    return Status();
  }

  GgufFile* out_;
  ByteReader r_;
};

StatusOr<GgufFile> GgufFile::open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  return parse(std::make_shared<MappedFile>(std::move(mapped)));
}

StatusOr<GgufFile> GgufFile::parse(std::shared_ptr<MappedFile> file) {
  GgufFile out;
  out.file_ = std::move(file);
  STRATA_RETURN_IF_ERROR(Parser(&out).run());
  return out;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_idx_.find(name);
  return it == tensor_idx_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<std::vector<GgufValue>> GgufFile::array_elements(const GgufArrayRef& array) const {
  ByteReader r(file_->data(), file_->size_bytes(), file_->path());
  r.seek(array.offset_bytes);
  std::vector<GgufValue> out;
  for (uint64_t i = 0; i < array.length; ++i) {
    GgufValue value;
    STRATA_RETURN_IF_ERROR(read_value(r, array.element_type, 0, &value));
    out.push_back(std::move(value));
  }
  return out;
}

Status GgufFile::type_error(const std::string& key, const GgufValue& value,
                            const char* expected) const {
  std::string got = gguf_value_type_name(value.type);
  if (const auto* array = std::get_if<GgufArrayRef>(&value.data)) {
    got += std::string(" of ") + gguf_value_type_name(array->element_type);
  }
  return invalid_argument(path() + ": metadata key '" + key + "' is " + got + "; expected " +
                          expected);
}

StatusOr<const GgufValue*> GgufFile::find_typed(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return not_found(path() + ": metadata key '" + key + "' not found");
  return value;
}

}  // namespace strata::model
