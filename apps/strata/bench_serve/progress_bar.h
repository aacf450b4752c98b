// A tqdm-style progress line on stderr:
//   "benchmark  37%|#######             | 37/100 [00:05<00:08,  7.21 req/s]"
// redrawn in place ("\r") at most every 100 ms by whichever thread advances
// it, and once more by finish(). Disabled bars print nothing.
//
// Thread-safety: advance() from any thread; finish() once, after the last
// advance().
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "bench_serve/http_client.h"

namespace strata::bench {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, bool enabled);
  void advance(int64_t n = 1);
  void finish();

 private:
  void draw(bool force);

  std::string label_;
  int64_t total_;
  bool enabled_;
  std::mutex mu_;
  int64_t done_ = 0;
  int64_t drawn_done_ = -1;  // done_ at the last draw
  Clock::time_point start_;
  Clock::time_point last_draw_;
};

}  // namespace strata::bench
