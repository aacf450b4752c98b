// Line plots rendered to an Image, for benchmark sweeps: one figure with a
// title, a legend, and panels stacked vertically that share the x quantity
// (e.g. output throughput and mean TTFT against the number of
// conversations). Each panel has its own y axis (from 0, "nice" 1-2-5
// ticks, dashed grid); the x axis is logarithmic (base 2) when every x is
// positive and they span a factor of 8 or more, else linear; with at most
// 12 distinct x values the ticks sit on the data. Series keep their colour
// (by position) across panels.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "bench_serve/png_writer.h"

namespace strata::bench {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;  // same length; drawn in order of x
};

struct PlotPanel {
  std::string title;
  std::string y_label;
  std::vector<PlotSeries> series;
};

struct PlotFigure {
  std::string title;
  std::string x_label;
  std::vector<PlotPanel> panels;
  int width = 960;
  int panel_height = 400;
};

Image render_plot(const PlotFigure& figure);

// Tick values covering [lo, hi] with a 1-2-5 step (exposed for tests).
std::vector<double> nice_ticks(double lo, double hi, int target_count);

}  // namespace strata::bench
