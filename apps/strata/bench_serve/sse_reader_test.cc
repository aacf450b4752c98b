#include "bench_serve/sse_reader.h"

#include <gtest/gtest.h>

namespace strata::bench {
namespace {

std::vector<std::string> feed_in_pieces(const std::string& stream, size_t piece) {
  SseReader reader;
  std::vector<std::string> events;
  for (size_t i = 0; i < stream.size(); i += piece) reader.feed(stream.substr(i, piece), &events);
  if (auto last = reader.finish()) events.push_back(*last);
  return events;
}

TEST(SseReaderTest, SplitsEventsAtBlankLines) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "[DONE]"};
  // Every piece size, including one byte at a time (splits inside "data:" and "\n\n").
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EXPECT_EQ(feed_in_pieces(stream, piece), want) << "piece size " << piece;
  }
}

TEST(SseReaderTest, CrLfCommentsAndOtherFields) {
  const std::string stream =
      ": keep-alive\r\n\r\nevent: message\r\nid: 7\r\ndata:no-space\r\n\r\nretry: 10\r\n\r\n";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EXPECT_EQ(feed_in_pieces(stream, piece), std::vector<std::string>{"no-space"});
  }
}

TEST(SseReaderTest, MultiLineDataJoinsWithNewline) {
  EXPECT_EQ(feed_in_pieces("data: line1\ndata: line2\n\n", 3),
            std::vector<std::string>{"line1\nline2"});
}

TEST(SseReaderTest, UnterminatedLastEventComesFromFinish) {
  SseReader reader;
  std::vector<std::string> events;
  reader.feed("data: a\n\ndata: b", &events);
  EXPECT_EQ(events, std::vector<std::string>{"a"});
  EXPECT_EQ(reader.finish(), std::optional<std::string>("b"));
  EXPECT_EQ(reader.finish(), std::nullopt);
}

TEST(SseReaderTest, KeepsUtf8SplitAcrossPieces) {
  const std::string stream = "data: {\"text\":\"caf\xC3\xA9\"}\n\n";
  for (size_t piece = 1; piece <= 4; ++piece) {
    EXPECT_EQ(feed_in_pieces(stream, piece),
              std::vector<std::string>{"{\"text\":\"caf\xC3\xA9\"}"});
  }
}

}  // namespace
}  // namespace strata::bench
