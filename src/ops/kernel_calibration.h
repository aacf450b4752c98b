// Load-time matmul kernel calibration: for each shape class a loaded model
// has (weight dtype x (n, k) x regime, ops/matmul_choice.h), time the kernels
// that can run it on this CPU and dispatch the class to the fastest. The
// result is cached per CPU signature and binary version under the user's
// cache directory, so later loads on the same host only read a small file.
//
// Decision rule (choose_matmul_kernel): the static choice stays unless a
// candidate's median time beats it by more than `margin` at some probe m of
// the regime (decode: m = 1 and m = 16; prefill: m = 256) and is slower by
// more than `margin` at none, and does so again in a second, independent set
// of rounds, so noise does not swap in a slower kernel. (A candidate may
// differ from the static kernel at some m only: kOwnHwPrefetch runs the same
// code as kOwn at m = 16.) Decode is one regime for all m <= 16 (batch
// invariance, see matmul_choice.h).
//
// Timing: each probe runs one warm-up call and a few timed ones (candidates
// interleaved, medians compared) on a scratch weight of the class's dtype and
// k (not the model's bytes); before each decode call the weight is flushed
// from the caches (clflush) so the call streams it from DRAM, as a decode
// step does; n is capped (8 MiB of weight for decode, 192 MFLOP for prefill)
// and the time scaled back to the full n. Total time is bounded by
// CalibrationOptions::budget_seconds (classes left over keep the static
// choice). Prefill probes run on the calling thread alone (their rates are
// one thread's GFLOP/s): a probe's few hundred rows would keep a different
// number of the pool's threads busy for each candidate.
//
// Threading: calibrate_matmul_kernels runs on the calling thread and uses
// `pool` for the timed decode matmuls; call it at load, before the engine runs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "ops/matmul_choice.h"

namespace strata::ops {

enum class CalibrationMode {
  kOff,   // the static dispatch; no timing, no cache
  kAuto,  // the cache where it has the class, else measure (and update the cache)
  kForce  // always measure (and rewrite the cache)
};
// "off" | "auto" | "force"; InvalidArgument otherwise.
StatusOr<CalibrationMode> parse_calibration_mode(const std::string& s);

// Rows of x each regime is measured at.
std::vector<int64_t> calibration_probe_rows(MatmulRegime regime);

// Runs one matmul of the class at m rows with `kernel` (a candidate of the
// class) and returns its seconds scaled to the class's full n. Called for a
// warm-up, then `reps` times per candidate, candidates interleaved (and `reps`
// more for the static kernel and a winner, to confirm a change).
// Injectable so tests decide without timing.
using MatmulTimer = std::function<double(const MatmulShapeClass& cls, MatmulKernel kernel,
                                         int64_t m)>;
// The real timer: times on `pool` as described above (owns its scratch).
MatmulTimer make_matmul_timer(ThreadPool& pool);

// Index into `candidates` of the kernel to use. seconds[c][p]: candidate c's
// time at probe p; candidates[0] is the static choice. Another candidate wins
// only when seconds[c][p] * (1 + margin) < seconds[0][p] for some p and
// seconds[c][p] <= seconds[0][p] * (1 + margin) for every p; among winners,
// the one with the smallest mean ratio to the static time over the probes.
size_t choose_matmul_kernel(const std::vector<std::vector<double>>& seconds, double margin);

struct ClassCalibration {
  MatmulShapeClass cls;
  MatmulKernel static_kernel = MatmulKernel::kOwn;
  MatmulKernel chosen = MatmulKernel::kOwn;
  // Decode: GB/s of weight at m = 1; prefill: one thread's GFLOP/s at m = 256. 0 = not
  // measured.
  double static_rate = 0, chosen_rate = 0;
  bool from_cache = false;
  bool measured = true;  // false: the time budget ran out first; static kept
  // Every candidate's rate when measured in this run (not cached).
  std::vector<std::pair<MatmulKernel, double>> others;
};

struct CalibrationReport {
  CalibrationMode mode = CalibrationMode::kOff;
  std::vector<ClassCalibration> classes;  // sorted by class
  double seconds = 0;                     // spent measuring (and reading the cache)
  std::string cache_path;                 // "" = no cache used
  std::vector<std::string> warnings;      // unreadable cache, failed write, budget ...
};

struct CalibrationOptions {
  CalibrationMode mode = CalibrationMode::kAuto;
  // File of cached results ("" = no cache). A file that cannot be parsed, or
  // that was written for another signature, is ignored (a warning) and rewritten.
  std::string cache_path;
  // CPU and binary identity the cache must match (cpu_signature() + version).
  std::string signature;
  int threads = 1;           // compute threads: part of each cached class's key
  double margin = 0.05;      // see choose_matmul_kernel
  double budget_seconds = 0.4;
  int reps = 5;  // timed rounds per probe (after one warm-up call per candidate)
};

// Calibrates every (shape, regime) class of `shapes` ((dtype, n, k); their
// regime is ignored: both are done) and returns what it chose; installs
// nothing. kOff returns the static choice for every class without timing.
CalibrationReport calibrate_matmul_kernels(const std::vector<MatmulShapeClass>& shapes,
                                           const CalibrationOptions& options,
                                           const MatmulTimer& timer);

// Installs the report's choices with set_matmul_choices (only the classes
// whose choice differs from the static one).
void install_calibration(const CalibrationReport& report);

// One line per class: "bf16 151936x896 decode: own 27.4 GB/s (static)" ...,
// then a total line with the time spent and where the cache is.
std::vector<std::string> describe_calibration(const CalibrationReport& report);

// $XDG_CACHE_HOME/strata/kernel-calibration-<hash of signature>.txt, else
// $HOME/.cache/strata/...; "" when neither variable is set.
std::string default_calibration_cache_path(const std::string& signature);

// The cache file's text for `classes` (threads is their key), and its parser:
// entries of other thread counts in `text` are kept in *others verbatim.
std::string format_calibration_cache(const std::string& signature, int threads,
                                     const std::vector<ClassCalibration>& classes,
                                     const std::vector<std::string>& others);
Status parse_calibration_cache(const std::string& text, const std::string& signature,
                               int threads, std::vector<ClassCalibration>* classes,
                               std::vector<std::string>* others);

}  // namespace strata::ops
