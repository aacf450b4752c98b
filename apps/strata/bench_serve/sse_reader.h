// Incremental text/event-stream (SSE) parser for streamed completions. Bytes
// are fed as they arrive, split anywhere (inside a line, between "\r" and
// "\n", inside a UTF-8 sequence); each complete event's data comes out once
// its terminating blank line has arrived.
//
//   feed(bytes, &events)  appends the data of every event completed by `bytes`
//   finish()              the data of a last event the stream did not terminate
//
// Rules (WHATWG "server-sent events"): lines end in "\n" or "\r\n"; a line
// starting with ':' is a comment; "data:value" and "data: value" are the same
// (one leading space is dropped); several data lines in one event are joined
// with "\n"; other fields (event, id, retry) are ignored.
//
// Thread-safety: one reader per stream, used by one thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::bench {

class SseReader {
 public:
  void feed(std::string_view bytes, std::vector<std::string>* events);
  std::optional<std::string> finish();

 private:
  void on_line(std::string_view line, std::vector<std::string>* events);

  std::string line_;  // the current, unterminated line
  std::string data_;  // data of the current event
  bool has_data_ = false;
};

}  // namespace strata::bench
