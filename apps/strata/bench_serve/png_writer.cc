#include "bench_serve/png_writer.h"

#include <zlib.h>

#include <fstream>

namespace strata::bench {
namespace {

void put_u32(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

// length, type, data, CRC-32 over type and data.
void put_chunk(std::string* out, const char type[4], const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const std::string typed = std::string(type, 4) + data;
  out->append(typed);
  put_u32(out, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(typed.data()),
                                           static_cast<uInt>(typed.size()))));
}

}  // namespace

Image::Image(int width, int height, Rgb fill) : width_(width), height_(height) {
  rgb_.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < rgb_.size(); i += 3) {
    rgb_[i] = fill.r;
    rgb_[i + 1] = fill.g;
    rgb_[i + 2] = fill.b;
  }
}

void Image::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  rgb_[i] = c.r;
  rgb_[i + 1] = c.g;
  rgb_[i + 2] = c.b;
}

Rgb Image::get(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return {};
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return {rgb_[i], rgb_[i + 1], rgb_[i + 2]};
}

std::string encode_png(const Image& image) {
  const size_t row_bytes = static_cast<size_t>(image.width()) * 3;
  std::string raw;
  raw.reserve((row_bytes + 1) * static_cast<size_t>(image.height()));
  for (int y = 0; y < image.height(); ++y) {
    raw.push_back('\0');  // filter type 0 (None)
    raw.append(
        reinterpret_cast<const char*>(image.rgb().data()) + static_cast<size_t>(y) * row_bytes,
        row_bytes);
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  const int rc =
      compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 9);
  STRATA_CHECK(rc == Z_OK) << "zlib compress2 failed: " << rc;
  packed.resize(packed_size);

  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_u32(&ihdr, static_cast<uint32_t>(image.width()));
  put_u32(&ihdr, static_cast<uint32_t>(image.height()));
  ihdr +=
      std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit, truecolour, deflate, filter 0, no interlace
  put_chunk(&out, "IHDR", ihdr);
  put_chunk(&out, "IDAT", packed);
  put_chunk(&out, "IEND", "");
  return out;
}

Status write_png(const std::string& path, const Image& image) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return invalid_argument("cannot open " + path + " for writing");
  const std::string bytes = encode_png(image);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return internal_error("writing " + path + " failed");
  return Status();
}

}  // namespace strata::bench
