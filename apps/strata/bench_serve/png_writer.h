// An RGB raster and its PNG encoding (8-bit truecolour, no interlace, filter
// type 0 on every row, zlib-compressed IDAT), enough for benchmark plots.
//
//   Image          width x height pixels, row-major RGB bytes
//   encode_png     the PNG file bytes
//   write_png      encode_png to a file
//
// Thread-safety: Image is a plain value; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace strata::bench {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
};

class Image {
 public:
  Image(int width, int height, Rgb fill);
  int width() const { return width_; }
  int height() const { return height_; }
  // Out-of-range coordinates are ignored (drawing clips).
  void set(int x, int y, Rgb c);
  Rgb get(int x, int y) const;
  const std::vector<uint8_t>& rgb() const { return rgb_; }  // [height, width, 3]

 private:
  int width_, height_;
  std::vector<uint8_t> rgb_;
};

std::string encode_png(const Image& image);
Status write_png(const std::string& path, const Image& image);

}  // namespace strata::bench
