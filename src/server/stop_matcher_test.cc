#include "server/stop_matcher.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

// Feeds `pieces` and returns what was emitted plus the flush (or up to the stop).
std::string run(StopMatcher& m, const std::vector<std::string>& pieces, bool* stopped,
                std::string* stop_str) {
  std::string out;
  *stopped = false;
  for (const std::string& p : pieces) {
    StopMatcher::Result r = m.push(p);
    out += r.text;
    if (r.stopped) {
      *stopped = true;
      *stop_str = r.stop_str;
      return out;
    }
  }
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesThrough) {
  StopMatcher m;
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, HoldsBackPartialStopAcrossPieces) {
  StopMatcher m({"###"}, false);
  EXPECT_EQ(m.push("hello #").text, "hello ");
  EXPECT_EQ(m.push("#").text, "");
  StopMatcher::Result r = m.push("# tail");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.stop_str, "###");
}

TEST(StopMatcher, ReleasesHeldTextWhenItIsNotAStop) {
  StopMatcher m({"###"}, false);
  EXPECT_EQ(m.push("a##").text, "a");
  EXPECT_EQ(m.push("b").text, "##b");
  EXPECT_EQ(m.push("#").text, "");
  EXPECT_EQ(m.flush(), "#");
}

TEST(StopMatcher, IncludeStopString) {
  StopMatcher m({"END"}, true);
  bool stopped = false;
  std::string which;
  EXPECT_EQ(run(m, {"abc E", "N", "D more"}, &stopped, &which), "abc END");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, EarliestOfSeveralStops) {
  StopMatcher m({"zz", "b"}, false);
  bool stopped = false;
  std::string which;
  EXPECT_EQ(run(m, {"aabzz"}, &stopped, &which), "aa");
  EXPECT_EQ(which, "b");
}

TEST(StopMatcher, RandomSplitsMatchWholeStringSearch) {
  const std::string text = "one two <stop> three";
  for (size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= text.size(); cut2 += 3) {
      StopMatcher m({"<stop>", "xyz"}, false);
      bool stopped = false;
      std::string which;
      std::string out =
          run(m, {text.substr(0, cut1), text.substr(cut1, cut2 - cut1), text.substr(cut2)},
              &stopped, &which);
      EXPECT_TRUE(stopped);
      EXPECT_EQ(out, "one two ");
    }
  }
}

}  // namespace
}  // namespace strata::server
