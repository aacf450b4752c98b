#include "bench_serve/png_writer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace strata::bench {
namespace {

uint32_t read_u32(const std::string& s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

struct Decoded {
  int width = 0, height = 0;
  std::vector<std::string> chunk_types;
  std::string raw;  // inflated IDAT: filter byte + RGB per row
};

// An independent reader: walks the chunks, checks every CRC, inflates IDAT.
Decoded decode(const std::string& png) {
  Decoded d;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t len = read_u32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string data = png.substr(at + 8, len);
    const uint32_t crc = read_u32(png, at + 8 + len);
    const std::string typed = type + data;
    EXPECT_EQ(crc, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(typed.data()),
                                               static_cast<uInt>(typed.size()))))
        << "bad CRC on " << type;
    d.chunk_types.push_back(type);
    if (type == "IHDR") {
      d.width = static_cast<int>(read_u32(data, 0));
      d.height = static_cast<int>(read_u32(data, 4));
      EXPECT_EQ(data.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
    }
    if (type == "IDAT") idat += data;
    at += 12 + len;
  }
  uLongf raw_size = static_cast<uLongf>(d.width * 3 + 1) * static_cast<uLongf>(d.height);
  d.raw.resize(raw_size);
  EXPECT_EQ(
      uncompress(reinterpret_cast<Bytef*>(d.raw.data()), &raw_size,
                 reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size())),
      Z_OK);
  EXPECT_EQ(raw_size, d.raw.size());
  return d;
}

Image test_image() {
  Image img(7, 5, Rgb{10, 20, 30});
  img.set(0, 0, {255, 0, 0});
  img.set(6, 4, {0, 0, 255});
  img.set(3, 2, {1, 2, 3});
  img.set(99, 99, {9, 9, 9});  // clipped
  return img;
}

TEST(PngWriterTest, ChunksCrcsAndPixelsRoundTrip) {
  const Image img = test_image();
  const Decoded d = decode(encode_png(img));
  EXPECT_EQ(d.width, 7);
  EXPECT_EQ(d.height, 5);
  EXPECT_EQ(d.chunk_types, (std::vector<std::string>{"IHDR", "IDAT", "IEND"}));
  for (int y = 0; y < 5; ++y) {
    const size_t row = static_cast<size_t>(y) * (7 * 3 + 1);
    EXPECT_EQ(d.raw[row], '\0') << "filter byte of row " << y;
    for (int x = 0; x < 7; ++x) {
      const Rgb c = img.get(x, y);
      const size_t i = row + 1 + static_cast<size_t>(x) * 3;
      EXPECT_EQ(static_cast<uint8_t>(d.raw[i]), c.r);
      EXPECT_EQ(static_cast<uint8_t>(d.raw[i + 1]), c.g);
      EXPECT_EQ(static_cast<uint8_t>(d.raw[i + 2]), c.b);
    }
  }
  EXPECT_EQ(img.get(0, 0), (Rgb{255, 0, 0}));
  EXPECT_EQ(img.get(3, 2), (Rgb{1, 2, 3}));
}

TEST(PngWriterTest, WritesTheFile) {
  const std::string path = ::testing::TempDir() + "/png_writer_test.png";
  ASSERT_TRUE(write_png(path, test_image()).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(), encode_png(test_image()));
  std::remove(path.c_str());
  EXPECT_FALSE(write_png("/nonexistent-dir/x.png", test_image()).ok());
}

}  // namespace
}  // namespace strata::bench
