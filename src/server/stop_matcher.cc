#include "server/stop_matcher.h"

#include <algorithm>

namespace strata::server {

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop_str)
    : include_stop_str_(include_stop_str) {
  for (std::string& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

size_t StopMatcher::held_suffix_length() const {
  size_t best = 0;
  for (const std::string& stop : stops_) {
    size_t max_len = std::min(stop.size() - 1, pending_.size());
    for (size_t len = max_len; len > best; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

StopMatcher::Result StopMatcher::push(std::string_view delta) {
  Result r;
  if (stops_.empty()) {
    r.text = std::string(delta);
    return r;
  }
  pending_.append(delta);
  size_t first_pos = std::string::npos;
  const std::string* first_stop = nullptr;
  for (const std::string& stop : stops_) {
    size_t pos = pending_.find(stop);
    if (pos < first_pos) {
      first_pos = pos;
      first_stop = &stop;
    }
  }
  if (first_stop != nullptr) {
    r.stopped = true;
    r.stop_str = *first_stop;
    r.text = pending_.substr(0, first_pos + (include_stop_str_ ? first_stop->size() : 0));
    pending_.clear();
    return r;
  }
  size_t held = held_suffix_length();
  r.text = pending_.substr(0, pending_.size() - held);
  pending_.erase(0, pending_.size() - held);
  return r;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace strata::server
