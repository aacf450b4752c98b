#include "spec_decode/draft_controller.h"

#include <gtest/gtest.h>

namespace strata::spec_decode {
namespace {

SpeculativeConfig ngram(int64_t k) {
  return {.method = SpeculativeMethod::kNgram,
          .num_speculative_tokens = k,
          .prompt_lookup_max = 2,
          .prompt_lookup_min = 1};
}

const std::vector<int32_t> kLoop = {5, 6, 5, 6, 5, 6};

TEST(DraftControllerTest, ProposesUpToKAndTheRoomLeft) {
  DraftController c(ngram(4));
  EXPECT_EQ(c.propose(kLoop, 10), (std::vector<int32_t>{5, 6, 5, 6}));
  EXPECT_EQ(c.propose(kLoop, 2), (std::vector<int32_t>{5, 6}));
  EXPECT_TRUE(c.propose(kLoop, 0).empty());
}

TEST(DraftControllerTest, LengthFollowsAcceptance) {
  DraftController c(ngram(4));
  c.on_verified(4, 1);
  EXPECT_EQ(c.draft_len(), 2);
  EXPECT_EQ(c.propose(kLoop, 10).size(), 2u);
  c.on_verified(2, 2);
  EXPECT_EQ(c.draft_len(), 3);
  c.on_verified(3, 3);
  c.on_verified(4, 4);
  EXPECT_EQ(c.draft_len(), 4);  // capped at k
}

TEST(DraftControllerTest, FruitlessVerifiesBackOffExponentially) {
  DraftController c(ngram(4));
  int64_t expected_pause = 0;
  for (int miss = 1; miss <= 8; ++miss) {
    c.on_verified(1, 0);
    expected_pause = std::min<int64_t>((int64_t{1} << std::min(miss, 6)) - 1,
                                       DraftController::kMaxCooldownSteps);
    EXPECT_EQ(c.cooldown_steps(), expected_pause) << "miss " << miss;
    for (int64_t i = 0; i < expected_pause; ++i) EXPECT_TRUE(c.propose(kLoop, 10).empty());
    EXPECT_FALSE(c.propose(kLoop, 10).empty());  // one probe after the pause
  }
  c.on_verified(1, 1);  // a hit ends the back-off
  EXPECT_EQ(c.cooldown_steps(), 0);
  c.on_verified(2, 0);
  EXPECT_EQ(c.cooldown_steps(), 1);
}

TEST(DraftControllerTest, MostlyWrongDraftsBackOffToo) {
  DraftController c(ngram(4));
  // One draft in four accepted: never fruitless, but below the bar after a
  // few verifies (1.0 -> 0.81 -> 0.67 -> 0.56 -> 0.48 -> 0.42 -> 0.38).
  int verifies = 0;
  while (c.cooldown_steps() == 0) {
    ASSERT_LT(verifies, 6) << "still proposing at running rate " << c.acceptance_rate();
    c.on_verified(4, 1);
    ++verifies;
  }
  EXPECT_EQ(verifies, 6);
  EXPECT_LT(c.acceptance_rate(), DraftController::kMinAcceptanceRate);
  EXPECT_EQ(c.cooldown_steps(), 1);
  EXPECT_TRUE(c.propose(kLoop, 10).empty());
  c.on_verified(2, 0);  // still wrong: the pause doubles
  EXPECT_EQ(c.cooldown_steps(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.propose(kLoop, 10).empty());
  c.on_verified(1, 1);  // a good probe ends the back-off
  EXPECT_EQ(c.cooldown_steps(), 0);
  EXPECT_GE(c.acceptance_rate(), DraftController::kMinAcceptanceRate);
  EXPECT_FALSE(c.propose(kLoop, 10).empty());
}

TEST(DraftControllerTest, MostlyRightDraftsKeepProposing) {
  DraftController c(ngram(4));
  for (int i = 0; i < 100; ++i) {
    c.on_verified(4, 2);  // half accepted: above the bar
    EXPECT_EQ(c.cooldown_steps(), 0) << "verify " << i;
  }
}

}  // namespace
}  // namespace strata::spec_decode
