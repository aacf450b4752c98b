#include "bench_serve/sse_reader.h"

namespace strata::bench {

void SseReader::on_line(std::string_view line, std::vector<std::string>* events) {
  if (line.empty()) {
    if (has_data_) events->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
}

void SseReader::feed(std::string_view bytes, std::vector<std::string>* events) {
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '\n') continue;
    line_.append(bytes.substr(start, i - start));
    start = i + 1;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    on_line(line_, events);
    line_.clear();
  }
  line_.append(bytes.substr(start));
}

std::optional<std::string> SseReader::finish() {
  std::vector<std::string> events;
  if (!line_.empty()) {
    if (line_.back() == '\r') line_.pop_back();
    on_line(line_, &events);
    line_.clear();
  }
  if (!has_data_) return std::nullopt;
  has_data_ = false;
  return std::move(data_);
}

}  // namespace strata::bench
