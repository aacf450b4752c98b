// A read-only set of named tensors backed by memory-mapped files
// (safetensors shards or one GGUF file). Views point into the mappings, which
// live as long as the WeightSource. Names are Hugging Face names
// ("model.layers.0.self_attn.q_proj.weight"); GGUF names are mapped on load.
// Threading: built once on one thread; afterwards const and safe to share.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/tensor_view.h"

namespace strata::model {

struct TensorEntry {
  tensor::TensorView view;  // row-major shape, outermost first
  std::string file;         // the file it came from (for error messages)
};

class WeightSource {
 public:
  WeightSource() = default;
  WeightSource(WeightSource&&) = default;
  WeightSource& operator=(WeightSource&&) = default;

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorEntry* find(const std::string& name) const;
  std::vector<std::string> names() const;

  // The tensor `name` with exactly `expected_shape`. Errors name the file, the
  // tensor, the expected and the actual shape; a missing tensor lists the file(s).
  StatusOr<tensor::TensorView> get(const std::string& name,
                                   const std::vector<int64_t>& expected_shape) const;

  // Adds a mapped file (kept alive) and its tensors. Duplicate names are an error.
  Status add_file(std::shared_ptr<MappedFile> file, std::map<std::string, TensorEntry> tensors);

  // Drops the resident pages of `view`'s bytes when they lie in one of the
  // mapped files (MappedFile::release_pages); no-op otherwise. For weights
  // whose bytes were copied at load (fused projections, Q8_0 repacked into
  // panels, the embedding table under a repacked tied head); a later read
  // faults them back in.
  void release_pages(const tensor::TensorView& view) const;

  // The paths of the files added, comma-separated (for error messages).
  std::string file_list() const;
  size_t num_tensors() const { return tensors_.size(); }

 private:
  std::vector<std::shared_ptr<MappedFile>> files_;
  std::vector<std::string> paths_;  // files added, in order (for messages)
  std::map<std::string, TensorEntry> tensors_;
};

}  // namespace strata::model
