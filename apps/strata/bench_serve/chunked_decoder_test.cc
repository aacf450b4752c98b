#include "bench_serve/chunked_decoder.h"

#include <gtest/gtest.h>

namespace strata::bench {
namespace {

TEST(ChunkedDecoderTest, DecodesInEveryPieceSize) {
  const std::string body = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";
  for (size_t piece = 1; piece <= body.size(); ++piece) {
    ChunkedDecoder d;
    std::string out;
    for (size_t i = 0; i < body.size(); i += piece) {
      ASSERT_TRUE(d.feed(std::string_view(body).substr(i, piece), &out).ok());
    }
    EXPECT_EQ(out, "hello, world") << "piece size " << piece;
    EXPECT_TRUE(d.done());
  }
}

TEST(ChunkedDecoderTest, HexSizesAndBareLf) {
  ChunkedDecoder d;
  std::string out;
  const std::string payload(26, 'z');
  ASSERT_TRUE(d.feed("1A\n" + payload + "\n0\n\n", &out).ok());
  EXPECT_EQ(out, payload);
  EXPECT_TRUE(d.done());
}

TEST(ChunkedDecoderTest, NotDoneBeforeTheLastChunk) {
  ChunkedDecoder d;
  std::string out;
  ASSERT_TRUE(d.feed("3\r\nabc\r\n", &out).ok());
  EXPECT_FALSE(d.done());
}

TEST(ChunkedDecoderTest, RejectsMalformedInput) {
  std::string out;
  ChunkedDecoder bad_size;
  EXPECT_FALSE(bad_size.feed("zz\r\n", &out).ok());
  ChunkedDecoder missing_crlf;
  EXPECT_FALSE(missing_crlf.feed("3\r\nabcX\r\n", &out).ok());
}

}  // namespace
}  // namespace strata::bench
