#include "offload/tiers/common/tier_registry.h"

#include <gtest/gtest.h>

namespace strata::offload {
namespace {

struct TapeConfig {
  int64_t reels = 1;
};
struct AnyConfig {};

TierType tape_type() {
  return {.type = "tape",
          .settings_type = typeid(TapeConfig),
          .parse = [](const config::JsonFields& r) -> StatusOr<SecondaryTierConfig> {
            STRATA_RETURN_IF_ERROR(r.check_keys({"type", "reels"}));
            SecondaryTierConfig tier;
            STRATA_RETURN_IF_ERROR(r.optional_int("reels", &tier.emplace<TapeConfig>().reels, 1));
            return tier;
          },
          .make = [](const SecondaryTierConfig&, const ChunkFormat&, const HostRegion&)
              -> StatusOr<std::unique_ptr<SecondaryTier>> { return unavailable("no drive"); }};
}

TierRegistry registry() {
  TierRegistry r;
  r.add(tape_type());
  r.add({.type = "anything with \"x\"",
         .accepts = [](const config::JsonFields& e) { return e.has("x"); },
         .settings_type = typeid(AnyConfig),
         .parse = [](const config::JsonFields&) -> StatusOr<SecondaryTierConfig> {
           SecondaryTierConfig tier;
           tier.emplace<AnyConfig>();
           return tier;
         },
         .make = [](const SecondaryTierConfig&, const ChunkFormat&, const HostRegion&)
             -> StatusOr<std::unique_ptr<SecondaryTier>> { return unavailable("any"); }});
  return r;
}

StatusOr<SecondaryTierConfig> parse(const std::string& json) {
  const config::Json j = config::Json::parse(json);
  return registry().parse(config::JsonFields(j, "tiers[0]", config::FieldStyle::kFlag));
}

TEST(TierRegistry, DispatchesByTypeThenToTheTypeThatAcceptsOthers) {
  StatusOr<SecondaryTierConfig> tape = parse(R"({"type": "tape", "reels": 3})");
  ASSERT_TRUE(tape.ok()) << tape.status().message();
  EXPECT_EQ(tape->type, "tape");
  EXPECT_EQ(tape->as<TapeConfig>().reels, 3);
  EXPECT_EQ(parse(R"({"type": "tape", "reels": 0})").status().message(),
            "tiers[0].reels must be an integer >= 1, got 0");
  StatusOr<SecondaryTierConfig> other = parse(R"({"type": "mine", "x": 1})");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->type, "mine");
  EXPECT_NE(other->settings_if<AnyConfig>(), nullptr);
  EXPECT_EQ(parse(R"({"type": "disk"})").status().message(),
            "tiers[0].type \"disk\" is not a tier this build provides (available: tape)");
  EXPECT_EQ(parse(R"({})").status().message(), "tiers[0].type is required");
}

TEST(TierRegistry, MakesTheTierItsSettingsBelongTo) {
  ChunkFormat format;
  HostRegion region;
  SecondaryTierConfig tape;
  tape.type = "tape";
  tape.emplace<TapeConfig>();
  EXPECT_EQ(registry().make(tape, format, region).status().message(), "no drive");
  SecondaryTierConfig unknown;
  unknown.type = "disk";
  EXPECT_EQ(registry().make(unknown, format, region).status().message(),
            "secondary tier type 'disk' is not known (known: tape, or anything with \"x\")");
}

}  // namespace
}  // namespace strata::offload
