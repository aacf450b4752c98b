// Drawing on an Image: filled rectangles, thick lines (Bresenham with a
// square pen), dashed horizontal grid lines, and text in the 5x7 bitmap font
// scaled by an integer factor. Everything clips to the image.
//
// Thread-safety: pure functions on the caller's Image.
#pragma once

#include <string>

#include "bench_serve/png_writer.h"

namespace strata::bench {

void fill_rect(Image* img, int x0, int y0, int x1, int y1, Rgb c);  // inclusive corners
void draw_line(Image* img, int x0, int y0, int x1, int y1, Rgb c, int thickness);
void draw_dashed_hline(Image* img, int x0, int x1, int y, Rgb c);

// `text` with its top-left corner at (x, y); each glyph pixel is a
// scale x scale square, glyphs advance 6 * scale pixels.
void draw_text(Image* img, int x, int y, const std::string& text, int scale, Rgb c);
// Same, rotated 90 degrees counter-clockwise (reads bottom to top), with
// its bottom-left corner at (x, y).
void draw_text_up(Image* img, int x, int y, const std::string& text, int scale, Rgb c);
int text_width(const std::string& text, int scale);
int text_height(int scale);  // above the baseline (descenders hang below)

}  // namespace strata::bench
