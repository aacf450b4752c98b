// Reads Hugging Face safetensors weights: one file, or shards listed by a
// model.safetensors.index.json. Files are memory-mapped and the tensor views
// point straight into the mappings (no copy); data is only as aligned as the
// writer made it (HF pads the header to 8 bytes).
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}},
// then the data; offsets are relative to the end of the header.
// Accepted dtypes: F32, F16, BF16. Every size and offset is checked against the
// file so a corrupt or truncated file gives a Status, never a crash.
//
// Operations (call from one thread; the WeightSource is then shareable):
//   parse_safetensors      - tensor table of one mapped file
//   open_safetensors       - one file -> WeightSource
//   open_safetensors_index - index.json + shards -> WeightSource
#pragma once

#include <map>
#include <string>

#include "base/mapped_file.h"
#include "base/status.h"
#include "model/loader/weight_source.h"

namespace strata::model {

// Largest header accepted (the format's own limit is 100 MB).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// The tensors of an already mapped file; views point into `file`.
StatusOr<std::map<std::string, TensorEntry>> parse_safetensors(const MappedFile& file);

StatusOr<WeightSource> open_safetensors(const std::string& path);

// Every tensor of the weight_map must be in the shard it names; shard names
// must be plain file names in the index's directory.
StatusOr<WeightSource> open_safetensors_index(const std::string& index_path);

}  // namespace strata::model
