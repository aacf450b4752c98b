#include "model/loader/weight_source.h"

#include <algorithm>
#include <utility>

namespace strata::model {

const TensorEntry* WeightSource::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string> WeightSource::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [name, entry] : tensors_) out.push_back(name);
  return out;
}

std::string WeightSource::file_list() const {
  if (paths_.empty()) return "(no weight files)";
  std::string s;
  for (const std::string& path : paths_) s += (s.empty() ? "" : ", ") + path;
  return s;
}

StatusOr<tensor::TensorView> WeightSource::get(const std::string& name,
                                               const std::vector<int64_t>& expected_shape) const {
  const TensorEntry* entry = find(name);
  if (entry == nullptr) {
    return not_found("tensor '" + name + "' not found in " + file_list());
  }
  if (entry->view.shape != expected_shape) {
    return invalid_argument(entry->file + ": tensor '" + name + "' has shape " +
                            entry->view.shape_string() + "; expected " +
                            tensor::shape_to_string(expected_shape));
  }
  return entry->view;
}

Status WeightSource::add_file(std::shared_ptr<MappedFile> file,
                              std::map<std::string, TensorEntry> tensors) {
  for (const auto& [name, entry] : tensors) {
    const TensorEntry* existing = find(name);
    if (existing != nullptr) {
      return invalid_argument("tensor '" + name + "' appears in both " + existing->file + " and " +
                              entry.file);
    }
  }
  auto add_path = [this](const std::string& path) {
    if (std::find(paths_.begin(), paths_.end(), path) == paths_.end()) paths_.push_back(path);
  };
  if (file != nullptr) add_path(file->path());
  for (const auto& [name, entry] : tensors) add_path(entry.file);
  tensors_.merge(tensors);
  files_.push_back(std::move(file));
  return Status();
}

void WeightSource::release_pages(const tensor::TensorView& view) const {
  const size_t bytes = static_cast<size_t>(view.size_bytes());
  for (const std::shared_ptr<MappedFile>& file : files_) {
    if (file->contains(view.data, bytes)) {
      file->release_pages(view.data, bytes);
      return;
    }
  }
}

}  // namespace strata::model
