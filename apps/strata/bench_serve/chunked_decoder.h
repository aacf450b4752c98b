// Incremental decoder for HTTP/1.1 chunked transfer encoding (RFC 9112 §7.1):
// bytes go in as they arrive from the socket, in pieces of any size (a chunk
// header may be split across reads); the payload comes out.
//
//   feed(bytes, &out)   appends decoded payload to out; error on malformed input
//   done()              the terminating zero-size chunk and trailers were read
//
// Thread-safety: one decoder per response, used by one thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::bench {

class ChunkedDecoder {
 public:
  Status feed(std::string_view bytes, std::string* out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSizeLine, kData, kDataEnd, kTrailers, kDone };
  Status on_size_line(const std::string& line);

  State state_ = State::kSizeLine;
  std::string line_;      // partial size / trailer line
  size_t remaining_ = 0;  // payload bytes left in the current chunk
};

}  // namespace strata::bench
