#include "bench_serve/line_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "bench_serve/canvas.h"

namespace strata::bench {
namespace {

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kGrid{200, 200, 200};
constexpr Rgb kPalette[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},
                            {214, 39, 40},  {148, 103, 189}, {140, 86, 75}};
constexpr int kScale = 2;       // text scale: 10 x 14 pixel glyphs
constexpr int kTitleBand = 44;  // figure title
constexpr int kLegendBand = 30;

Rgb series_color(size_t idx) { return kPalette[idx % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::string format_tick(double v, double step) {
  char buf[32];
  if (std::fabs(v) >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  } else {
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  }
  return buf;
}

std::string format_x(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// Maps data x to [0, 1] across the panel.
struct XAxis {
  bool is_log = false;
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  double unit(double x) const {
    const double v = is_log ? std::log2(x) : x;
    return (v - lo) / (hi - lo);
  }
};

XAxis make_x_axis(const PlotFigure& f) {
  std::set<double> xs;
  for (const PlotPanel& p : f.panels) {
    for (const PlotSeries& s : p.series) xs.insert(s.x.begin(), s.x.end());
  }
  XAxis a;
  if (xs.empty()) return a;
  const double mn = *xs.begin(), mx = *xs.rbegin();
  a.is_log = mn > 0 && mx / mn >= 8;
  const double lo = a.is_log ? std::log2(mn) : mn, hi = a.is_log ? std::log2(mx) : mx;
  const double pad = hi > lo ? (hi - lo) * 0.06 : 1;
  a.lo = lo - pad;
  a.hi = hi + pad;
  if (xs.size() <= 12) {
    a.ticks.assign(xs.begin(), xs.end());
  } else {
    a.ticks = a.is_log ? std::vector<double>(xs.begin(), xs.end()) : nice_ticks(mn, mx, 8);
  }
  return a;
}

struct YAxis {
  std::vector<double> ticks;
  double lo = 0, hi = 1, step = 1;
  double unit(double y) const { return (y - lo) / (hi - lo); }
};

YAxis make_y_axis(const PlotPanel& p) {
  double mn = 0, mx = 0;
  for (const PlotSeries& s : p.series) {
    for (double y : s.y) {
      if (!std::isfinite(y)) continue;
      mn = std::min(mn, y);
      mx = std::max(mx, y);
    }
  }
  if (mx <= mn) mx = mn + 1;
  YAxis a;
  a.ticks = nice_ticks(mn, mx * 1.05, 5);
  a.lo = a.ticks.front();
  a.hi = a.ticks.back();
  a.step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1;
  return a;
}

void draw_legend(Image* img, const PlotFigure& f) {
  std::vector<std::string> names;
  for (const PlotPanel& p : f.panels) {
    for (size_t i = 0; i < p.series.size(); ++i) {
      if (i >= names.size()) names.push_back(p.series[i].name);
    }
  }
  int x = 40;
  const int y = kTitleBand + 6;
  for (size_t i = 0; i < names.size(); ++i) {
    fill_rect(img, x, y + 5, x + 28, y + 8, series_color(i));
    fill_rect(img, x + 11, y + 3, x + 17, y + 10, series_color(i));
    draw_text(img, x + 36, y, names[i], kScale, kBlack);
    x += 36 + text_width(names[i], kScale) + 30;
  }
}

void draw_series(Image* img, const PlotSeries& s, Rgb color, const XAxis& xa, const YAxis& ya,
                 int left, int top, int w, int h) {
  std::vector<std::pair<double, double>> pts;
  for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
    if (std::isfinite(s.y[i]) && (!xa.is_log || s.x[i] > 0)) pts.emplace_back(s.x[i], s.y[i]);
  }
  std::sort(pts.begin(), pts.end());
  auto px = [&](double x) { return left + static_cast<int>(std::lround(xa.unit(x) * w)); };
  auto py = [&](double y) { return top + h - static_cast<int>(std::lround(ya.unit(y) * h)); };
  for (size_t i = 1; i < pts.size(); ++i) {
    draw_line(img, px(pts[i - 1].first), py(pts[i - 1].second), px(pts[i].first), py(pts[i].second),
              color, 3);
  }
  for (const auto& [x, y] : pts) fill_rect(img, px(x) - 4, py(y) - 4, px(x) + 4, py(y) + 4, color);
}

void draw_panel(Image* img, const PlotFigure& f, const PlotPanel& p, const XAxis& xa, int top) {
  const YAxis ya = make_y_axis(p);
  int label_w = 0;
  for (double t : ya.ticks)
    label_w = std::max(label_w, text_width(format_tick(t, ya.step), kScale));
  const int left = 12 + text_height(kScale) + 12 + label_w + 10;
  const int right = f.width - 30;
  const int plot_top = top + 34, plot_bottom = top + f.panel_height - 62;
  const int w = right - left, h = plot_bottom - plot_top;
  draw_text(img, left + (w - text_width(p.title, kScale)) / 2, top + 10, p.title, kScale, kBlack);
  for (double t : ya.ticks) {
    const int y = plot_bottom - static_cast<int>(std::lround(ya.unit(t) * h));
    draw_dashed_hline(img, left, right, y, kGrid);
    fill_rect(img, left - 6, y, left - 1, y, kBlack);
    const std::string label = format_tick(t, ya.step);
    draw_text(img, left - 10 - text_width(label, kScale), y - text_height(kScale) / 2, label,
              kScale, kBlack);
  }
  draw_text_up(img, 12, plot_top + (h + text_width(p.y_label, kScale)) / 2, p.y_label, kScale,
               kBlack);
  int last_label_end = -1000;
  for (double t : xa.ticks) {
    const int x = left + static_cast<int>(std::lround(xa.unit(t) * w));
    fill_rect(img, x, plot_bottom + 1, x, plot_bottom + 6, kBlack);
    const std::string label = format_x(t);
    const int lx = x - text_width(label, kScale) / 2;
    if (lx <= last_label_end + 8) continue;  // would overlap the previous label
    draw_text(img, lx, plot_bottom + 12, label, kScale, kBlack);
    last_label_end = lx + text_width(label, kScale);
  }
  draw_text(img, left + (w - text_width(f.x_label, kScale)) / 2, plot_bottom + 36, f.x_label,
            kScale, kBlack);
  for (size_t i = 0; i < p.series.size(); ++i) {
    draw_series(img, p.series[i], series_color(i), xa, ya, left, plot_top, w, h);
  }
  draw_line(img, left, plot_top, right, plot_top, kBlack, 1);
  draw_line(img, left, plot_bottom, right, plot_bottom, kBlack, 1);
  draw_line(img, left, plot_top, left, plot_bottom, kBlack, 1);
  draw_line(img, right, plot_top, right, plot_bottom, kBlack, 1);
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target_count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9);
  for (double k = first; (k - 1) * step < hi - step * 1e-9; k += 1) {
    const double t = k * step;
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

Image render_plot(const PlotFigure& f) {
  const int height = kTitleBand + kLegendBand + f.panel_height * static_cast<int>(f.panels.size());
  Image img(f.width, height, kWhite);
  draw_text(&img, (f.width - text_width(f.title, kScale)) / 2, 16, f.title, kScale, kBlack);
  draw_legend(&img, f);
  const XAxis xa = make_x_axis(f);
  for (size_t i = 0; i < f.panels.size(); ++i) {
    draw_panel(&img, f, f.panels[i], xa,
               kTitleBand + kLegendBand + static_cast<int>(i) * f.panel_height);
  }
  return img;
}

}  // namespace strata::bench
