#include "bench_serve/line_plot.h"

#include <gtest/gtest.h>

#include "bench_serve/bitmap_font.h"
#include "bench_serve/canvas.h"

namespace strata::bench {
namespace {

int count_color(const Image& img, Rgb c) {
  int n = 0;
  for (int y = 0; y < img.height(); ++y) {
    for (int x = 0; x < img.width(); ++x) n += img.get(x, y) == c;
  }
  return n;
}

TEST(LinePlotTest, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  const std::vector<double> small = nice_ticks(0, 0.9, 5);
  const std::vector<double> want = {0, 0.2, 0.4, 0.6, 0.8, 1.0};
  ASSERT_EQ(small.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(small[i], want[i], 1e-12);
  const std::vector<double> big = nice_ticks(0, 1234, 5);
  EXPECT_EQ(big.front(), 0);
  EXPECT_EQ(big[1], 200);
  EXPECT_GE(big.back(), 1234);
}

TEST(LinePlotTest, DrawsEverySeriesInItsColour) {
  PlotFigure f;
  f.title = "Sweep";
  f.x_label = "max concurrency";
  f.panels = {{"Output token throughput",
               "tokens/s",
               {{"a", {1, 4, 16}, {10, 30, 50}}, {"b", {1, 4, 16}, {5, 6, 7}}}},
              {"Mean TTFT", "ms", {{"a", {1, 4, 16}, {100, 400, 900}}}}};
  const Image img = render_plot(f);
  EXPECT_EQ(img.width(), 960);
  EXPECT_EQ(img.height(), 44 + 30 + 2 * 400);
  EXPECT_GT(count_color(img, {31, 119, 180}), 500);  // series a (both panels)
  EXPECT_GT(count_color(img, {255, 127, 14}), 200);  // series b
  EXPECT_GT(count_color(img, {0, 0, 0}), 2000);      // axes and text
}

TEST(LinePlotTest, SurvivesDegenerateData) {
  PlotFigure f;
  f.panels = {{"empty", "", {}}, {"one point", "", {{"s", {3}, {0}}}}};
  const Image img = render_plot(f);
  EXPECT_GT(img.height(), 0);
}

TEST(CanvasTest, TextUsesTheFont) {
  Image img(40, 20, {255, 255, 255});
  draw_text(&img, 0, 0, "1", 1, {0, 0, 0});
  // '1' row 0 is 0x04: only the middle pixel of five.
  EXPECT_EQ(img.get(2, 0), (Rgb{0, 0, 0}));
  EXPECT_EQ(img.get(0, 0), (Rgb{255, 255, 255}));
  EXPECT_EQ(text_width("ab", 2), 22);
  EXPECT_EQ(glyph_rows('\x01'), glyph_rows('\x02'));  // unknown characters share the box
}

}  // namespace
}  // namespace strata::bench
