#include "model/loader/safetensors.h"

#include <cstring>
#include <limits>
#include <memory>
#include <set>

#include "config/json_fields.h"

namespace strata::model {
namespace {

using nlohmann::json;

// Where one file's tensor data lies in its mapping.
struct DataRegion {
  const uint8_t* begin;
  uint64_t size_bytes;
  const std::string& path;
};

Status tensor_error(const std::string& path, const std::string& name, const std::string& what) {
  return data_loss(path + ": tensor '" + name + "': " + what);
}

StatusOr<tensor::DType> parse_dtype(const json& entry, const std::string& path,
                                    const std::string& name) {
  auto it = entry.find("dtype");
  if (it == entry.end() || !it->is_string()) {
    return tensor_error(path, name, "'dtype' must be a string");
  }
  const std::string dtype = it->get<std::string>();
  if (dtype == "F32") return tensor::DType::kF32;
  if (dtype == "F16") return tensor::DType::kF16;
  if (dtype == "BF16") return tensor::DType::kBF16;
  return unimplemented(path + ": tensor '" + name + "' has dtype " + dtype +
                       "; Strata reads F32, F16 and BF16 safetensors");
}

// Shape dims and their product; false on a negative dim or int64 overflow.
bool parse_shape(const json& shape, std::vector<int64_t>* dims, int64_t* num_elements) {
  if (!shape.is_array()) return false;
  int64_t n = 1;
  for (const json& d : shape) {
    if (!d.is_number_unsigned()) return false;  // nlohmann: non-negative integers
    uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    if (__builtin_mul_overflow(n, static_cast<int64_t>(v), &n)) return false;
    dims->push_back(static_cast<int64_t>(v));
  }
  *num_elements = n;
  return true;
}

StatusOr<TensorEntry> parse_entry(const json& entry, const std::string& name,
                                  const DataRegion& data) {
  if (!entry.is_object()) return tensor_error(data.path, name, "entry must be an object");
  STRATA_ASSIGN_OR_RETURN(tensor::DType dtype, parse_dtype(entry, data.path, name));
  TensorEntry out;
  int64_t num_elements = 0;
  auto shape = entry.find("shape");
  if (shape == entry.end() || !parse_shape(*shape, &out.view.shape, &num_elements)) {
    return tensor_error(data.path, name,
                        "'shape' must be a list of non-negative integers "
                        "whose product fits in int64");
  }
  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return tensor_error(data.path, name, "'data_offsets' must be [begin, end]");
  }
  const uint64_t begin = (*offsets)[0].get<uint64_t>();
  const uint64_t end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > data.size_bytes) {
    return tensor_error(data.path, name,
                        "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                            "] lie outside the " + std::to_string(data.size_bytes) +
                            " data bytes (truncated file?)");
  }
  int64_t size_bytes = 0;
  const int64_t elem_bytes = tensor::dtype_block_bytes(dtype);
  if (__builtin_mul_overflow(num_elements, elem_bytes, &size_bytes) ||
      static_cast<uint64_t>(size_bytes) != end - begin) {
    return tensor_error(data.path, name,
                        "data_offsets span " + std::to_string(end - begin) + " bytes; shape " +
                            tensor::shape_to_string(out.view.shape) + " of " +
                            tensor::dtype_name(dtype) + " needs " + std::to_string(num_elements) +
                            " x " + std::to_string(elem_bytes));
  }
  out.view.dtype = dtype;
  out.view.data = data.begin + begin;
  out.file = data.path;
  return out;
}

StatusOr<uint64_t> read_header_length(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size_bytes() < 8) {
    return data_loss(path + ": " + std::to_string(file.size_bytes()) +
                     " bytes is too short for a safetensors file (8-byte header length)");
  }
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data(), 8);  // little-endian host (x86-64)
  if (header_bytes > file.size_bytes() - 8) {
    return data_loss(path + ": header length " + std::to_string(header_bytes) +
                     " is larger than the file (" + std::to_string(file.size_bytes()) +
                     " bytes); truncated or not a safetensors file");
  }
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    return data_loss(path + ": header length " + std::to_string(header_bytes) +
                     " exceeds the 100 MB safetensors limit");
  }
  return header_bytes;
}

std::string directory_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// index.json's weight_map as shard file name -> tensor names.
StatusOr<std::map<std::string, std::set<std::string>>> read_weight_map(
    const std::string& index_path) {
  STRATA_ASSIGN_OR_RETURN(std::string text, read_file_to_string(index_path));
  STRATA_ASSIGN_OR_RETURN(json index, config::parse_json_object(text, index_path));
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object()) {
    return invalid_argument(index_path + ": field 'weight_map' (an object) is missing");
  }
  std::map<std::string, std::set<std::string>> shards;
  for (const auto& [name, shard] : map->items()) {
    if (!shard.is_string()) {
      return invalid_argument(index_path + ": weight_map['" + name + "'] must be a string");
    }
    const std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      return invalid_argument(index_path + ": weight_map['" + name + "'] = '" + file +
                              "' is not a plain file name");
    }
    shards[file].insert(name);
  }
  return shards;
}

}  // namespace

StatusOr<std::map<std::string, TensorEntry>> parse_safetensors(const MappedFile& file) {
  const std::string& path = file.path();
  STRATA_ASSIGN_OR_RETURN(uint64_t header_bytes, read_header_length(file));
  std::string text(reinterpret_cast<const char*>(file.data()) + 8, header_bytes);
  STRATA_ASSIGN_OR_RETURN(
      json header, config::parse_json_object(text, path + " (header)", StatusCode::kDataLoss));
  DataRegion data{file.data() + 8 + header_bytes, file.size_bytes() - 8 - header_bytes, path};
  std::map<std::string, TensorEntry> tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    STRATA_ASSIGN_OR_RETURN(TensorEntry parsed, parse_entry(entry, name, data));
    tensors.emplace(name, std::move(parsed));
  }
  return tensors;
}

StatusOr<WeightSource> open_safetensors(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  STRATA_ASSIGN_OR_RETURN(auto tensors, parse_safetensors(*file));
  WeightSource weights;
  STRATA_RETURN_IF_ERROR(weights.add_file(file, std::move(tensors)));
  return weights;
}

StatusOr<WeightSource> open_safetensors_index(const std::string& index_path) {
  STRATA_ASSIGN_OR_RETURN(auto shards, read_weight_map(index_path));
  const std::string dir = directory_of(index_path);
  WeightSource weights;
  for (const auto& [shard, names] : shards) {
    const std::string shard_path = dir + "/" + shard;
    StatusOr<MappedFile> mapped = MappedFile::open(shard_path);
    if (!mapped.ok()) {
      return Status(mapped.status().code(), index_path + " names shard '" + shard +
                                                "' for tensor '" + *names.begin() +
                                                "': " + mapped.status().message());
    }
    auto file = std::make_shared<MappedFile>(std::move(mapped).value());
    STRATA_ASSIGN_OR_RETURN(auto tensors, parse_safetensors(*file));
    for (const std::string& name : names) {
      if (tensors.count(name) == 0) {
        return not_found(index_path + ": tensor '" + name + "' is mapped to " + shard_path +
                         ", which does not contain it");
      }
    }
    STRATA_RETURN_IF_ERROR(weights.add_file(file, std::move(tensors)));
  }
  return weights;
}

}  // namespace strata::model
