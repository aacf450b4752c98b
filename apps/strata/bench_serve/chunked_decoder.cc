#include "bench_serve/chunked_decoder.h"

#include <charconv>

namespace strata::bench {

Status ChunkedDecoder::on_size_line(const std::string& line) {
  std::string_view hex = line;
  if (size_t semi = hex.find(';'); semi != std::string_view::npos) hex = hex.substr(0, semi);
  while (!hex.empty() && (hex.back() == ' ' || hex.back() == '\t')) hex.remove_suffix(1);
  size_t size = 0;
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
  if (hex.empty() || ec != std::errc() || ptr != hex.data() + hex.size()) {
    return data_loss("malformed chunk size line '" + line + "' in a chunked HTTP body");
  }
  remaining_ = size;
  state_ = size == 0 ? State::kTrailers : State::kData;
  return Status();
}

Status ChunkedDecoder::feed(std::string_view bytes, std::string* out) {
  size_t i = 0;
  while (i < bytes.size() && state_ != State::kDone) {
    if (state_ == State::kData) {
      size_t n = std::min(remaining_, bytes.size() - i);
      out->append(bytes.substr(i, n));
      i += n;
      remaining_ -= n;
      if (remaining_ == 0) state_ = State::kDataEnd;
      continue;
    }
    char c = bytes[i++];
    if (c != '\n') {
      line_.push_back(c);
      if (line_.size() > 4096) return data_loss("chunk header line longer than 4096 bytes");
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    std::string line = std::move(line_);
    line_.clear();
    if (state_ == State::kSizeLine) {
      STRATA_RETURN_IF_ERROR(on_size_line(line));
    } else if (state_ == State::kDataEnd) {
      if (!line.empty()) return data_loss("chunk data not followed by CRLF");
      state_ = State::kSizeLine;
    } else if (line.empty()) {  // kTrailers: a blank line ends the message
      state_ = State::kDone;
    }
  }
  return Status();
}

}  // namespace strata::bench
