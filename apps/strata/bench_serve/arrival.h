// When each request is due, as `vllm bench serve` schedules them: all at
// t = 0 for an infinite rate; otherwise gaps drawn from
// Gamma(shape = burstiness, scale = 1 / (rate * burstiness)) (burstiness 1 =
// Poisson arrivals), accumulated, then rescaled so that the last request is
// due exactly at n / rate.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::bench {

// Seconds from the start of the run; `rate` in requests/s (inf allowed).
std::vector<double> make_arrival_times(int64_t n, double rate, double burstiness, uint64_t seed);

}  // namespace strata::bench
