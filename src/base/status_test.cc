#include "base/status.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

StatusOr<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("x=" + std::to_string(x) + " must be positive");
  return x;
}

StatusOr<int> doubled(int x) {
  STRATA_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status().ok());
  Status s = not_found("tensor 'a'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.to_string(), "NOT_FOUND: tensor 'a'");
  EXPECT_EQ(s.with_prefix("file.gguf").message(), "file.gguf: tensor 'a'");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(doubled(3).value(), 6);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("x=-1"), std::string::npos);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = internal_error("boom");
  EXPECT_DEATH((void)bad.value(), "boom");
}

}  // namespace
}  // namespace strata
