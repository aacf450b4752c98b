#include "bench_serve/progress_bar.h"

#include <algorithm>
#include <cstdio>

namespace strata::bench {
namespace {

std::string clock_text(double s) {
  const int64_t t = static_cast<int64_t>(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(t / 3600),
                  static_cast<long long>(t / 60 % 60), static_cast<long long>(t % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld", static_cast<long long>(t / 60),
                  static_cast<long long>(t % 60));
  }
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total, bool enabled)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), enabled_(enabled) {
  start_ = Clock::now();
  if (enabled_) draw(true);
}

void ProgressBar::advance(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  draw(false);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) return;
  if (drawn_done_ != done_) draw(true);
  std::fputc('\n', stderr);
  enabled_ = false;
}

void ProgressBar::draw(bool force) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100) && done_ < total_) return;
  last_draw_ = now;
  drawn_done_ = done_;
  constexpr int kWidth = 20;
  const double frac = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
  const int filled = static_cast<int>(frac * kWidth);
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  const double left = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
  std::fprintf(stderr, "\r%s %3d%%|%s%s| %lld/%lld [%s<%s, %6.2f req/s]", label_.c_str(),
               static_cast<int>(frac * 100), std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(),
               static_cast<long long>(done_), static_cast<long long>(total_),
               clock_text(elapsed).c_str(), clock_text(left).c_str(), rate);
  std::fflush(stderr);
}

}  // namespace strata::bench
