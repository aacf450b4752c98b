#include "server/kv_events_config.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

std::string error_of(const std::string& json) {
  StatusOr<events::KvEventsConfig> c = parse_kv_events_config(json);
  EXPECT_FALSE(c.ok()) << json;
  return c.ok() ? "" : c.status().message();
}

bool has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(KvEventsConfig, ParsesTheIssueExample) {
  StatusOr<events::KvEventsConfig> c = parse_kv_events_config(
      R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",)"
      R"("topic":"kv-events"})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->enable_kv_cache_events);
  EXPECT_EQ(c->publisher, "zmq");
  EXPECT_EQ(c->endpoint, "tcp://*:5557");
  EXPECT_EQ(c->topic, "kv-events");
  EXPECT_EQ(c->replay_endpoint, "");
  EXPECT_EQ(c->buffer_steps, 10000);
  EXPECT_EQ(c->hwm, 100000);
  EXPECT_EQ(c->max_queue_size, 100000);
  EXPECT_EQ(c->event_encoding, events::EventEncoding::kArray);
}

TEST(KvEventsConfig, EveryKey) {
  StatusOr<events::KvEventsConfig> c = parse_kv_events_config(
      R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://10.0.0.1:5557",)"
      R"("replay_endpoint":"tcp://*:5558","buffer_steps":5,"hwm":7,"max_queue_size":9,)"
      R"("topic":"kv@pod@model","event_encoding":"map"})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->endpoint, "tcp://10.0.0.1:5557");
  EXPECT_EQ(c->replay_endpoint, "tcp://*:5558");
  EXPECT_EQ(c->buffer_steps, 5);
  EXPECT_EQ(c->hwm, 7);
  EXPECT_EQ(c->max_queue_size, 9);
  EXPECT_EQ(c->topic, "kv@pod@model");
  EXPECT_EQ(c->event_encoding, events::EventEncoding::kMap);
}

TEST(KvEventsConfig, PublisherDefaultsFollowEnable) {
  StatusOr<events::KvEventsConfig> on =
      parse_kv_events_config(R"({"enable_kv_cache_events":true})");
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->publisher, "zmq");
  StatusOr<events::KvEventsConfig> off = parse_kv_events_config("{}");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enable_kv_cache_events);
  EXPECT_EQ(off->publisher, "null");
  StatusOr<events::KvEventsConfig> null_replay =
      parse_kv_events_config(R"({"replay_endpoint":null,"buffer_steps":1e3})");
  ASSERT_TRUE(null_replay.ok()) << null_replay.status().message();
  EXPECT_EQ(null_replay->replay_endpoint, "");
  EXPECT_EQ(null_replay->buffer_steps, 1000);
}

TEST(KvEventsConfig, UnknownKeysAndWrongTypesNameTheKey) {
  EXPECT_TRUE(
      has(error_of(R"({"enable_kv_cache_events":true,"endpiont":"x"})"), "unknown key endpiont"));
  EXPECT_TRUE(has(error_of(R"({"enable_kv_cache_events":"yes"})"),
                  "enable_kv_cache_events must be true or false, got \"yes\""));
  EXPECT_TRUE(has(error_of(R"({"publisher":"kafka"})"), "publisher must be \"zmq\" or \"null\""));
  EXPECT_TRUE(has(error_of(R"({"endpoint":5557})"), "endpoint must be a string, got 5557"));
  EXPECT_TRUE(has(error_of(R"({"endpoint":""})"), "endpoint must be a ZeroMQ endpoint"));
  EXPECT_TRUE(
      has(error_of(R"({"replay_endpoint":1})"), "replay_endpoint must be a string or null"));
  EXPECT_TRUE(has(error_of(R"({"topic":null})"), "topic must be a string"));
  EXPECT_TRUE(has(error_of(R"({"buffer_steps":-1})"), "buffer_steps must be an integer >= 0"));
  EXPECT_TRUE(has(error_of(R"({"hwm":1.5})"), "hwm must be an integer >= 0, got 1.5"));
  // 2^64-1 must not wrap to -1 (see KvTransferConfig.IntegersOutsideInt64AreRejectedNotConverted).
  EXPECT_TRUE(has(error_of(R"({"hwm":18446744073709551615})"), "hwm must be an integer >= 0"));
  EXPECT_TRUE(has(error_of(R"({"hwm":7.7e64})"), "hwm must be an integer >= 0"));
  EXPECT_TRUE(has(error_of(R"({"max_queue_size":0})"), "max_queue_size must be an integer >= 1"));
  EXPECT_TRUE(has(error_of(R"({"event_encoding":"json"})"), "event_encoding must be"));
  EXPECT_TRUE(has(error_of("[1]"), "expects a JSON object"));
  EXPECT_TRUE(has(error_of("{not json"), "expects a JSON object"));
}

}  // namespace
}  // namespace strata::server
