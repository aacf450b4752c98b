// Sweep mode of `strata bench serve` and `strata bench plot`: one run per
// value of the swept parameter, the results in one JSON file
//   {"sweep_parameter", "label", "values", "results": [<result JSON>...]}
// and a PNG with output throughput, mean TTFT and (when the server reports
// usage.prompt_tokens_details) the cached share of prompt tokens against it.
// Each point runs with --seed plus its index, so a point never finds the
// previous point's prompts in the server's cache, while repeating a sweep
// (e.g. against another server configuration) repeats the same workloads.
#include <cstdio>
#include <fstream>

#include "bench_serve/line_plot.h"
#include "bench_serve/report.h"
#include "bench_serve.h"

namespace strata::app {
namespace {

using nlohmann::ordered_json;

struct SweepSpec {
  std::string parameter;  // key in the sweep JSON
  std::vector<double> values;
};

StatusOr<SweepSpec> sweep_spec(const ServeBenchFlags& f) {
  const std::pair<std::string, std::string> options[] = {
      {"max_concurrency", f.sweep_max_concurrency},
      {"request_rate", f.sweep_request_rate},
      {"num_prompts", f.sweep_num_prompts},
      {"num_conversations", f.sweep_num_conversations}};
  SweepSpec spec;
  for (const auto& [name, text] : options) {
    if (text.empty()) continue;
    if (!spec.parameter.empty()) return invalid_argument("give only one --sweep-* flag");
    spec.parameter = name;
    std::string item;
    for (char c : text + ",") {
      if (c != ',') {
        item.push_back(c);
        continue;
      }
      if (item.empty()) continue;
      StatusOr<double> v = parse_rate(item);  // numbers, and "inf" for request rates
      if (!v.ok()) return invalid_argument("--sweep-* value '" + item + "' is not a number");
      spec.values.push_back(*v);
      item.clear();
    }
  }
  if (spec.values.empty()) return invalid_argument("the --sweep-* list is empty");
  if (spec.parameter == "num_conversations" && f.dataset != "multi-turn") {
    return invalid_argument("--sweep-num-conversations needs --dataset multi-turn");
  }
  return spec;
}

PointParams point_for(const PointParams& base, const SweepSpec& spec, size_t idx) {
  PointParams p = base;
  const double v = spec.values[idx];
  if (spec.parameter == "max_concurrency") p.max_concurrency = static_cast<int64_t>(v);
  if (spec.parameter == "request_rate") p.request_rate = v;
  if (spec.parameter == "num_prompts")
    p.num_prompts = p.num_conversations = static_cast<int64_t>(v);
  if (spec.parameter == "num_conversations") p.num_conversations = static_cast<int64_t>(v);
  p.seed = base.seed + idx;
  return p;
}

std::string x_label(const std::string& parameter) {
  if (parameter == "max_concurrency") return "max concurrency";
  if (parameter == "request_rate") return "request rate (req/s)";
  if (parameter == "num_prompts") return "prompts";
  return "conversations";
}

std::string sweep_json_path(const ServeBenchFlags& f, const std::string& parameter) {
  if (!f.result_file.empty()) return f.result_file;
  if (!f.plot.empty()) {
    const size_t dot = f.plot.rfind('.');
    return (dot == std::string::npos ? f.plot : f.plot.substr(0, dot)) + ".json";
  }
  return f.result_dir + "/sweep-" + parameter + "-" + bench::timestamp_now() + ".json";
}

// One series per sweep file, for each panel.
bench::PlotFigure sweep_figure(const std::vector<ordered_json>& sweeps, const std::string& title) {
  bench::PlotFigure fig;
  fig.title = title;
  fig.x_label = x_label(sweeps.front().value("sweep_parameter", ""));
  bench::PlotPanel tput{"Output token throughput", "tokens/s", {}};
  bench::PlotPanel ttft{"Mean time to first token", "ms", {}};
  bench::PlotPanel cached{"Prompt tokens served from cache (usage.cached_tokens)", "%", {}};
  bool has_cached = false;
  for (const ordered_json& sweep : sweeps) {
    const std::string name = sweep.value("label", "run");
    bench::PlotSeries a{name, {}, {}}, b{name, {}, {}}, c{name, {}, {}};
    const ordered_json& values = sweep["values"];
    const ordered_json& results = sweep["results"];
    for (size_t i = 0; i < std::min(values.size(), results.size()); ++i) {
      if (!values[i].is_number()) continue;  // "inf" request rate: no x position
      const double x = values[i].get<double>();
      a.x.push_back(x);
      a.y.push_back(results[i].value("output_throughput", 0.0));
      b.x.push_back(x);
      b.y.push_back(results[i].value("mean_ttft_ms", 0.0));
      if (results[i].contains("cached_prompt_fraction") &&
          results[i]["cached_prompt_fraction"].is_number()) {
        has_cached = true;
        c.x.push_back(x);
        c.y.push_back(results[i]["cached_prompt_fraction"].get<double>() * 100);
      }
    }
    tput.series.push_back(a);
    ttft.series.push_back(b);
    cached.series.push_back(c);
  }
  fig.panels = {tput, ttft};
  if (has_cached) fig.panels.push_back(cached);
  return fig;
}

Status draw_plot(const std::vector<ordered_json>& sweeps, const std::string& title,
                 const std::string& path) {
  STRATA_RETURN_IF_ERROR(bench::write_png(path, bench::render_plot(sweep_figure(sweeps, title))));
  std::fprintf(stderr, "plot saved to %s\n", path.c_str());
  return Status();
}

int fail(const std::string& command, const Status& s) {
  std::fprintf(stderr, "strata bench %s: %s\n", command.c_str(), s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

bool is_sweep(const ServeBenchFlags& f) {
  return !f.sweep_max_concurrency.empty() || !f.sweep_request_rate.empty() ||
         !f.sweep_num_prompts.empty() || !f.sweep_num_conversations.empty();
}

int run_bench_sweep(const ServeBenchFlags& f, const BenchSetup& s) {
  StatusOr<SweepSpec> spec = sweep_spec(f);
  if (!spec.ok()) return fail("serve", spec.status());
  ordered_json sweep;
  sweep["sweep_parameter"] = spec->parameter;
  sweep["label"] = f.label.empty() ? s.model.id : f.label;
  sweep["values"] = ordered_json::array();
  sweep["results"] = ordered_json::array();
  const PointParams base = base_point(f);
  bool all_completed = true;  // every point completed something (the single-run rule)
  for (size_t i = 0; i < spec->values.size(); ++i) {
    const double v = spec->values[i];
    std::printf("\n### sweep %s = %g (%zu of %zu)\n", spec->parameter.c_str(), v, i + 1,
                spec->values.size());
    StatusOr<ordered_json> r = run_bench_point(f, s, point_for(base, *spec, i));
    if (!r.ok()) return fail("serve", r.status());
    all_completed = all_completed && (*r)["completed"].get<int64_t>() > 0;
    sweep["values"].push_back(std::isfinite(v) ? ordered_json(v) : ordered_json("inf"));
    sweep["results"].push_back(std::move(*r));
    const std::string path = sweep_json_path(f, spec->parameter);
    if (Status w = write_json_file(path, sweep); !w.ok())
      return fail("serve", w);  // after each point
  }
  std::fprintf(stderr, "sweep results saved to %s\n", sweep_json_path(f, spec->parameter).c_str());
  if (!f.plot.empty()) {
    const std::string title = f.plot_title.empty()
                                  ? "strata bench serve: " + f.dataset + ", " + s.model.id
                                  : f.plot_title;
    if (Status p = draw_plot({sweep}, title, f.plot); !p.ok()) return fail("serve", p);
  }
  return all_completed ? 0 : 1;
}

int run_bench_plot(const std::vector<std::string>& args) {
  std::string output, title = "strata bench serve";
  FlagSet flags("bench plot");
  flags.add_string("output", &output, "PNG file to write");
  flags.add_string("title", &title, "plot title");
  if (Status s = flags.parse(args); !s.ok()) return fail("plot", s);
  if (flags.help_requested() || flags.positional().empty() || output.empty()) {
    std::fputs(
        "usage: strata bench plot SWEEP.json [SWEEP.json...] --output FILE.png\n"
        "  one series per sweep file (its \"label\"), from `strata bench serve --sweep-*`\n",
        stdout);
    return flags.help_requested() ? 0 : 2;
  }
  std::vector<ordered_json> sweeps;
  for (const std::string& path : flags.positional()) {
    std::ifstream in(path);
    ordered_json j = ordered_json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("values") || !j.contains("results")) {
      return fail("plot", invalid_argument(path + " is not a sweep JSON from strata bench serve"));
    }
    sweeps.push_back(std::move(j));
  }
  if (Status p = draw_plot(sweeps, title, output); !p.ok()) return fail("plot", p);
  return 0;
}

}  // namespace strata::app
