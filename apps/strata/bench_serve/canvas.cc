#include "bench_serve/canvas.h"

#include <algorithm>
#include <cstdlib>

#include "bench_serve/bitmap_font.h"

namespace strata::bench {

void fill_rect(Image* img, int x0, int y0, int x1, int y1, Rgb c) {
  if (x0 > x1) std::swap(x0, x1);
  if (y0 > y1) std::swap(y0, y1);
  for (int y = std::max(0, y0); y <= std::min(img->height() - 1, y1); ++y) {
    for (int x = std::max(0, x0); x <= std::min(img->width() - 1, x1); ++x) img->set(x, y, c);
  }
}

void draw_line(Image* img, int x0, int y0, int x1, int y1, Rgb c, int thickness) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  int err = dx + dy;
  while (true) {
    fill_rect(img, x0 + lo, y0 + lo, x0 + hi, y0 + hi, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void draw_dashed_hline(Image* img, int x0, int x1, int y, Rgb c) {
  for (int x = x0; x <= x1; ++x) {
    if ((x - x0) % 8 < 4) img->set(x, y, c);
  }
}

int text_width(const std::string& text, int scale) {
  if (text.empty()) return 0;
  return static_cast<int>(text.size()) * (kGlyphWidth + 1) * scale - scale;
}

int text_height(int scale) { return kGlyphCapHeight * scale; }

void draw_text(Image* img, int x, int y, const std::string& text, int scale, Rgb c) {
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t* rows = glyph_rows(text[i]);
    const int gx = x + static_cast<int>(i) * (kGlyphWidth + 1) * scale;
    for (int r = 0; r < kGlyphHeight; ++r) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if ((rows[r] >> (kGlyphWidth - 1 - col)) & 1) {
          fill_rect(img, gx + col * scale, y + r * scale, gx + (col + 1) * scale - 1,
                    y + (r + 1) * scale - 1, c);
        }
      }
    }
  }
}

void draw_text_up(Image* img, int x, int y, const std::string& text, int scale, Rgb c) {
  for (size_t i = 0; i < text.size(); ++i) {
    const uint8_t* rows = glyph_rows(text[i]);
    const int gy = y - static_cast<int>(i) * (kGlyphWidth + 1) * scale;  // glyph's bottom edge
    for (int r = 0; r < kGlyphHeight; ++r) {
      for (int col = 0; col < kGlyphWidth; ++col) {
        if ((rows[r] >> (kGlyphWidth - 1 - col)) & 1) {
          // Rotated CCW: glyph column -> upward offset, glyph row -> rightward offset.
          const int px = x + r * scale, py = gy - (col + 1) * scale + 1;
          fill_rect(img, px, py, px + scale - 1, py + scale - 1, c);
        }
      }
    }
  }
}

}  // namespace strata::bench
