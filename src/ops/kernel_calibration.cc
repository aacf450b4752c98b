// Load-time matmul kernel calibration (see kernel_calibration.h). Portable
// code: the timed calls go through cpu::run_matmul like ops::matmul's.
#include "ops/kernel_calibration.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/check.h"
#include "base/mapped_file.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu/panels.h"
#include "tensor/tensor_view.h"

namespace strata::ops {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCacheHeader = "strata-kernel-calibration v1";
constexpr int64_t kPrefillProbeRows = 256;
constexpr int64_t kDecodeWindowBytes = int64_t{8} << 20;   // weight bytes per decode call
constexpr int64_t kScratchBytes = kDecodeWindowBytes;      // every probe's weight fits
constexpr double kPrefillProbeFlops = 192e6;               // flops per prefill call

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Weight bytes (decode) or flops (prefill) of one call of the full class at m.
double work(const MatmulShapeClass& c, int64_t m) {
  if (c.regime == MatmulRegime::kDecode) {
    return static_cast<double>(tensor::dtype_size_bytes(c.dtype, c.n * c.k));
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(c.n) * static_cast<double>(c.k);
}

// GB/s or GFLOP/s of `seconds` at the regime's first probe.
double rate(const MatmulShapeClass& c, double seconds) {
  if (!(seconds > 0)) return 0;
  return work(c, calibration_probe_rows(c.regime)[0]) / seconds / 1e9;
}

bool parse_dtype(const std::string& name, tensor::DType* out) {
  for (int i = 0; i <= static_cast<int>(tensor::DType::kIQ4_XS); ++i) {
    const auto d = static_cast<tensor::DType>(i);
    if (name == tensor::dtype_name(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

// The real timer's state: a scratch region the probes' weights are carved
// from (byte 0x11 everywhere: a finite, normal value for every dtype and
// valid scales for the quantized blocks), x and y buffers.
class ScratchTimer {
 public:
  explicit ScratchTimer(ThreadPool& pool) : pool_(pool), solo_(1) {}

  double time(const MatmulShapeClass& c, MatmulKernel kernel, int64_t m) {
    if (region_.data() == nullptr) {
      region_ = tensor::AlignedBuffer<uint8_t>(kScratchBytes, kHugePageBytes);
      advise_huge_pages(region_.data(), static_cast<size_t>(kScratchBytes));
      std::memset(region_.data(), 0x11, static_cast<size_t>(kScratchBytes));
    }
    const int64_t row_bytes = tensor::dtype_size_bytes(c.dtype, c.k);
    int64_t rows;
    if (c.regime == MatmulRegime::kDecode) {
      rows = std::max<int64_t>(16, kDecodeWindowBytes / row_bytes / 16 * 16);
    } else {
      rows = static_cast<int64_t>(kPrefillProbeFlops / (2.0 * m * c.k)) / cpu::kPrefillTileRows *
             cpu::kPrefillTileRows;
      rows = std::max<int64_t>(cpu::kPrefillTileRows, rows);
    }
    rows = std::min(rows, c.n);
    const int64_t bytes = rows * row_bytes;
    STRATA_CHECK(bytes <= kScratchBytes) << "calibration probe of " << bytes << " bytes";
    if (static_cast<int64_t>(x_.size()) < m * c.k) {
      x_.resize(static_cast<size_t>(m * c.k));
      for (size_t i = 0; i < x_.size(); ++i) x_[i] = 0.25f * std::sin(0.37f * static_cast<float>(i));
    }
    if (static_cast<int64_t>(y_.size()) < m * rows) y_.resize(static_cast<size_t>(m * rows));
    // The probe weight is prepared once per shape: every round of every
    // candidate times the same one (panels would otherwise be repacked each time).
    if (w_.n() != rows || w_.k() != c.k || w_.dtype() != c.dtype) {
      w_ = MatmulWeight::prepare_unlisted({region_.data(), c.dtype, {rows, c.k}});
    }
    const MatmulWeight& w = w_;
    if (c.regime == MatmulRegime::kDecode) {
      // Out of every cache level first, so the call streams it from DRAM as
      // a decode step does (the whole model does not fit in cache).
      cpu::evict_from_caches(region_.data(), bytes);
      // A weight in panels: the kernel reads the copy prepare just wrote.
      if (w.panels() != nullptr) {
        cpu::evict_from_caches(w.panels(), cpu::panel_count(rows) * cpu::panel_bytes(c.dtype, c.k));
      }
    }
    // Prefill probes run on this thread alone: a probe of a few hundred rows
    // is fewer units than the pool has threads for oneDNN (whole
    // prefill_slice_rows() calls) and not for our kernels (16-row units), so
    // on the pool it would time how many threads each keeps busy on the
    // probe, not their speed on the model's n (measured: our kernel chosen
    // at half oneDNN's speed on 2 threads).
    ThreadPool& pool = c.regime == MatmulRegime::kPrefill ? solo_ : pool_;
    const Clock::time_point start = Clock::now();
    cpu::run_matmul(cpu::active_kernels(), x_.data(), m, w, nullptr, y_.data(), pool, kernel);
    return seconds_since(start) * static_cast<double>(c.n) / static_cast<double>(rows);
  }

 private:
  ThreadPool& pool_;
  ThreadPool solo_;  // the calling thread only (no workers)
  tensor::AlignedBuffer<uint8_t> region_;
  MatmulWeight w_;  // the last probe weight (its rows are region_'s first bytes)
  std::vector<float> x_, y_;
};

// seconds[c][p]: the median over `reps` rounds of candidate c at probes[p].
// Each round calls every candidate in turn, so a slow phase of a noisy host
// hits them alike; `warm_up` first calls each once untimed (oneDNN compiles
// its kernel then).
std::vector<std::vector<double>> median_seconds(const MatmulTimer& timer,
                                                const MatmulShapeClass& cls,
                                                const std::vector<MatmulKernel>& cands,
                                                const std::vector<int64_t>& probes, int reps,
                                                bool warm_up) {
  std::vector<std::vector<double>> seconds(cands.size());
  for (int64_t m : probes) {
    std::vector<std::vector<double>> times(cands.size());
    // A tile variant that runs kOwn's code at this m is not timed again: it
    // takes kOwn's median (so noise cannot make it lose where it is the same).
    auto timed = [&](size_t i) {
      return i == 0 || cands[0] != MatmulKernel::kOwn || decode_variant_matters_at(cands[i], m);
    };
    if (warm_up) {
      for (size_t i = 0; i < cands.size(); ++i) {
        if (timed(i)) timer(cls, cands[i], m);
      }
    }
    for (int rep = 0; rep < std::max(1, reps); ++rep) {
      for (size_t i = 0; i < cands.size(); ++i) {
        if (timed(i)) times[i].push_back(timer(cls, cands[i], m));
      }
    }
    for (size_t i = 0; i < cands.size(); ++i) {
      std::vector<double>& t = timed(i) ? times[i] : times[0];
      std::sort(t.begin(), t.end());
      seconds[i].push_back(t[t.size() / 2]);
    }
  }
  return seconds;
}

std::string class_key(const MatmulShapeClass& c) {
  return std::string(tensor::dtype_name(c.dtype)) + " " + std::to_string(c.n) + "x" +
         std::to_string(c.k) + " " + matmul_regime_name(c.regime);
}

// Reads the whole file; false when it does not exist or cannot be read.
bool read_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return false;
  *text = s.str();
  return true;
}

// tmp + rename, so a reader never sees half a file.
Status write_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) return unavailable("cannot create " + p.parent_path().string() + ": " + ec.message());
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return unavailable("cannot write " + tmp);
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return unavailable("cannot rename " + tmp + " to " + path);
  }
  return Status();
}

}  // namespace

StatusOr<CalibrationMode> parse_calibration_mode(const std::string& s) {
  if (s == "off") return CalibrationMode::kOff;
  if (s == "auto") return CalibrationMode::kAuto;
  if (s == "force") return CalibrationMode::kForce;
  return invalid_argument("--kernel-calibration must be off, auto or force, got '" + s + "'");
}

std::vector<int64_t> calibration_probe_rows(MatmulRegime regime) {
  if (regime == MatmulRegime::kDecode) return {1, cpu::kDecodeMaxRows};
  return {kPrefillProbeRows};
}

MatmulTimer make_matmul_timer(ThreadPool& pool) {
  auto state = std::make_shared<ScratchTimer>(pool);
  return [state](const MatmulShapeClass& c, MatmulKernel kernel, int64_t m) {
    return state->time(c, kernel, m);
  };
}

size_t choose_matmul_kernel(const std::vector<std::vector<double>>& seconds, double margin) {
  STRATA_CHECK(!seconds.empty()) << "no candidates";
  size_t best = 0;
  double best_ratio = 1.0;
  const size_t probes = seconds[0].size();
  for (size_t c = 1; c < seconds.size(); ++c) {
    STRATA_CHECK(seconds[c].size() == probes) << "probe count mismatch";
    double sum = 0;
    bool faster_somewhere = false, slower_nowhere = true;
    for (size_t p = 0; p < probes; ++p) {
      const double s = seconds[c][p], base = seconds[0][p];
      if (!(s > 0) || !(base > 0)) {  // a failed measurement never wins
        slower_nowhere = false;
        break;
      }
      faster_somewhere = faster_somewhere || s * (1.0 + margin) < base;
      slower_nowhere = slower_nowhere && s <= base * (1.0 + margin);
      sum += s / base;
    }
    const double mean = probes > 0 ? sum / static_cast<double>(probes) : 1.0;
    if (faster_somewhere && slower_nowhere && mean < best_ratio) {
      best = c;
      best_ratio = mean;
    }
  }
  return best;
}

std::string format_calibration_cache(const std::string& signature, int threads,
                                     const std::vector<ClassCalibration>& classes,
                                     const std::vector<std::string>& others) {
  std::ostringstream out;
  out << kCacheHeader << "\n" << "signature " << signature << "\n";
  out << "# threads dtype n k regime chosen chosen_rate static static_rate\n";
  for (const std::string& line : others) out << line << "\n";
  char rates[64];
  for (const ClassCalibration& c : classes) {
    if (!c.measured) continue;
    std::snprintf(rates, sizeof(rates), "%.3f", c.chosen_rate);
    std::string chosen_rate = rates;
    std::snprintf(rates, sizeof(rates), "%.3f", c.static_rate);
    out << threads << " " << tensor::dtype_name(c.cls.dtype) << " " << c.cls.n << " " << c.cls.k
        << " " << matmul_regime_name(c.cls.regime) << " " << matmul_kernel_name(c.chosen) << " "
        << chosen_rate << " " << matmul_kernel_name(c.static_kernel) << " " << rates << "\n";
  }
  return out.str();
}

Status parse_calibration_cache(const std::string& text, const std::string& signature,
                               int threads, std::vector<ClassCalibration>* classes,
                               std::vector<std::string>* others) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kCacheHeader) {
    return data_loss("not a kernel calibration cache (bad first line)");
  }
  if (!std::getline(in, line) || line != "signature " + signature) {
    return unavailable("written for another CPU or binary");
  }
  int number = 2;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int t = 0;
    std::string dtype, regime, chosen, static_kernel, extra;
    ClassCalibration c;
    c.from_cache = true;
    fields >> t >> dtype >> c.cls.n >> c.cls.k >> regime >> chosen >> c.chosen_rate >>
        static_kernel >> c.static_rate;
    const bool ok = !fields.fail() && !(fields >> extra) && t > 0 && c.cls.n > 0 &&
                    c.cls.k > 0 && parse_dtype(dtype, &c.cls.dtype) &&
                    (regime == "decode" || regime == "prefill") &&
                    parse_matmul_kernel(chosen, &c.chosen) &&
                    parse_matmul_kernel(static_kernel, &c.static_kernel) &&
                    std::isfinite(c.chosen_rate) && std::isfinite(c.static_rate);
    if (!ok) return data_loss("line " + std::to_string(number) + " unreadable: '" + line + "'");
    c.cls.regime = regime == "decode" ? MatmulRegime::kDecode : MatmulRegime::kPrefill;
    if (t == threads) {
      classes->push_back(c);
    } else {
      others->push_back(line);
    }
  }
  return Status();
}

CalibrationReport calibrate_matmul_kernels(const std::vector<MatmulShapeClass>& shapes,
                                           const CalibrationOptions& options,
                                           const MatmulTimer& timer) {
  const Clock::time_point start = Clock::now();
  CalibrationReport report;
  report.mode = options.mode;
  std::vector<MatmulShapeClass> classes;
  for (const MatmulShapeClass& s : shapes) {
    for (MatmulRegime r : {MatmulRegime::kDecode, MatmulRegime::kPrefill}) {
      classes.push_back({s.dtype, s.n, s.k, r});
    }
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());

  for (const MatmulShapeClass& c : classes) {
    ClassCalibration cc;
    cc.cls = c;
    cc.static_kernel = cc.chosen = matmul_candidates(c)[0];
    cc.measured = false;
    report.classes.push_back(cc);
  }
  if (options.mode == CalibrationMode::kOff) return report;

  // The cache: entries for this thread count whose static kernel is still
  // the static one and whose choice is still a candidate.
  std::vector<ClassCalibration> cached;
  std::vector<std::string> others;
  bool rewrite = false;
  if (!options.cache_path.empty()) {
    report.cache_path = options.cache_path;
    std::string text;
    if (read_file(options.cache_path, &text)) {
      Status s = parse_calibration_cache(text, options.signature, options.threads, &cached,
                                         &others);
      if (!s.ok()) {
        report.warnings.push_back("ignoring kernel calibration cache " + options.cache_path +
                                  ": " + s.message() + "; recalibrating");
        cached.clear();
        others.clear();
      }
    }
  }
  if (options.mode == CalibrationMode::kAuto) {
    for (ClassCalibration& cc : report.classes) {
      for (const ClassCalibration& hit : cached) {
        if (!(hit.cls == cc.cls) || hit.static_kernel != cc.static_kernel) continue;
        const std::vector<MatmulKernel> cands = matmul_candidates(cc.cls);
        if (std::find(cands.begin(), cands.end(), hit.chosen) == cands.end()) continue;
        cc = hit;
        cc.measured = true;
      }
    }
  }

  // Measure what the cache did not have: classes with a choice to make first,
  // then the single-candidate ones (their rate is only reported).
  std::vector<ClassCalibration*> todo;
  for (ClassCalibration& cc : report.classes) {
    if (!cc.from_cache && matmul_candidates(cc.cls).size() > 1) todo.push_back(&cc);
  }
  for (ClassCalibration& cc : report.classes) {
    if (!cc.from_cache && matmul_candidates(cc.cls).size() == 1) todo.push_back(&cc);
  }
  int skipped = 0;
  for (ClassCalibration* cc : todo) {
    if (seconds_since(start) > options.budget_seconds) {
      ++skipped;
      continue;
    }
    const std::vector<MatmulKernel> cands = matmul_candidates(cc->cls);
    const std::vector<int64_t> probes = calibration_probe_rows(cc->cls.regime);
    std::vector<std::vector<double>> seconds =
        median_seconds(timer, cc->cls, cands, probes, options.reps, /*warm_up=*/true);
    cc->others.clear();
    for (size_t i = 0; i < cands.size(); ++i) {
      cc->others.push_back({cands[i], rate(cc->cls, seconds[i][0])});
    }
    size_t best = choose_matmul_kernel(seconds, options.margin);
    if (best != 0) {
      // A change must win a second, independent set of rounds too: one burst
      // of noise on a shared host must not swap in a kernel.
      const std::vector<MatmulKernel> pair = {cands[0], cands[best]};
      const std::vector<std::vector<double>> again =
          median_seconds(timer, cc->cls, pair, probes, options.reps, /*warm_up=*/false);
      if (choose_matmul_kernel(again, options.margin) != 1) best = 0;
    }
    cc->chosen = cands[best];
    cc->static_rate = rate(cc->cls, seconds[0][0]);
    cc->chosen_rate = rate(cc->cls, seconds[best][0]);
    cc->measured = true;
    rewrite = true;
  }
  if (skipped > 0) {
    report.warnings.push_back("kernel calibration time budget (" +
                              std::to_string(options.budget_seconds) + " s) ran out: " +
                              std::to_string(skipped) + " classes keep the static choice");
  }
  if (rewrite && !options.cache_path.empty()) {
    // Keep cached classes of this thread count that this model does not have.
    std::vector<ClassCalibration> all = report.classes;
    for (const ClassCalibration& hit : cached) {
      bool have = false;
      for (const ClassCalibration& cc : report.classes) have = have || cc.cls == hit.cls;
      if (!have) all.push_back(hit);
    }
    std::sort(all.begin(), all.end(), [](const ClassCalibration& a, const ClassCalibration& b) {
      return a.cls < b.cls;
    });
    Status s = write_file_atomically(
        options.cache_path, format_calibration_cache(options.signature, options.threads, all,
                                                     others));
    if (!s.ok()) report.warnings.push_back("kernel calibration cache not saved: " + s.message());
  }
  report.seconds = seconds_since(start);
  return report;
}

void install_calibration(const CalibrationReport& report) {
  std::vector<MatmulChoice> choices;
  for (const ClassCalibration& c : report.classes) {
    if (c.chosen != c.static_kernel) choices.push_back({c.cls, c.chosen});
  }
  set_matmul_choices(choices);
}

std::vector<std::string> describe_calibration(const CalibrationReport& report) {
  std::vector<std::string> lines;
  if (report.mode == CalibrationMode::kOff) {
    lines.push_back("kernel calibration off: static kernel choice");
    return lines;
  }
  char buf[256];
  int from_cache = 0, changed = 0;
  for (const ClassCalibration& c : report.classes) {
    const char* unit = c.cls.regime == MatmulRegime::kDecode ? "GB/s" : "GFLOP/s/thread";
    from_cache += c.from_cache ? 1 : 0;
    changed += c.chosen != c.static_kernel ? 1 : 0;
    if (!c.measured) {
      std::snprintf(buf, sizeof(buf), "  %-26s %-14s (static, not measured)",
                    class_key(c.cls).c_str(), matmul_kernel_name(c.chosen));
    } else {
      // The chosen kernel, then what the others measured (static marked).
      std::string rest;
      if (c.from_cache) {
        if (c.chosen != c.static_kernel) {
          std::snprintf(buf, sizeof(buf), "; static %s %.1f", matmul_kernel_name(c.static_kernel),
                        c.static_rate);
          rest = buf;
        }
        rest += "; cached";
      } else {
        for (const auto& [kernel, r] : c.others) {
          if (kernel == c.chosen) continue;
          std::snprintf(buf, sizeof(buf), "; %s%s %.1f",
                        kernel == c.static_kernel ? "static " : "", matmul_kernel_name(kernel), r);
          rest += buf;
        }
      }
      std::snprintf(buf, sizeof(buf), "  %-26s %-14s %7.1f %-7s (%s%s)", class_key(c.cls).c_str(),
                    matmul_kernel_name(c.chosen), c.chosen_rate, unit,
                    c.chosen == c.static_kernel ? "static" : "changed", rest.c_str());
    }
    lines.push_back(buf);
  }
  std::snprintf(buf, sizeof(buf),
                "kernel calibration (%s): %zu classes, %d from cache, %d changed from static, "
                "%.0f ms%s%s",
                report.mode == CalibrationMode::kForce ? "force" : "auto", report.classes.size(),
                from_cache, changed, report.seconds * 1e3,
                report.cache_path.empty() ? "" : ", cache ", report.cache_path.c_str());
  lines.insert(lines.begin(), buf);
  for (const std::string& w : report.warnings) lines.push_back("warning: " + w);
  return lines;
}

std::string default_calibration_cache_path(const std::string& signature) {
  std::string dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] != '\0') {
    dir = std::string(xdg) + "/strata";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    dir = std::string(home) + "/.cache/strata";
  } else {
    return "";
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : signature) h = (h ^ ch) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof(name), "/kernel-calibration-%016llx.txt",
                static_cast<unsigned long long>(h));
  return dir + name;
}

}  // namespace strata::ops
