// A scripted KV event publisher for kv_events_subscriber_test.py.
//
//   events_publish_demo --endpoint E --replay R --topic T --encoding array|map
//
// Protocol on stdin/stdout (one line each):
//   publishes batches 0 and 1 before any subscriber can know the endpoint,
//   prints "READY <pub endpoint> <replay endpoint>",
//   waits for "go", publishes the remaining batches, prints "SENT <count>",
//   waits for "quit" (or end of input), prints "DONE published=N dropped=D".
// The script (script_batches) is mirrored by the Python test's expectations.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "events/kv_event_publisher.h"

namespace strata::events {
namespace {

// Hash i of the script: spread over the whole u64 range (about half >= 2^63).
uint64_t script_hash(uint64_t i) { return 0x9e3779b97f4a7c15ull * (i + 1); }

std::vector<int32_t> token_range(int32_t first, int32_t count, int32_t step = 1) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < count; ++i) out.push_back(first + i * step);
  return out;
}

BlockStored stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent,
                   std::vector<int32_t> tokens, const char* medium, std::string locality = "") {
  BlockStored e;
  e.block_hashes = std::move(hashes);
  e.parent_block_hash = parent;
  e.token_ids = std::move(tokens);
  e.block_size = 16;
  e.medium = medium;
  e.locality = std::move(locality);
  return e;
}

BlockRemoved removed(std::vector<uint64_t> hashes, const char* medium, std::string locality = "") {
  return BlockRemoved{std::move(hashes), medium, std::move(locality)};
}

std::vector<std::vector<KvEvent>> script_batches() {
  const auto h = script_hash;
  std::vector<std::vector<KvEvent>> batches;
  batches.push_back({stored({h(0), h(1)}, std::nullopt, token_range(0, 32), kMediumGpu)});
  batches.push_back({stored({h(2)}, h(1), token_range(32, 16), kMediumGpu),
                     stored({h(0), h(1)}, std::nullopt, {}, kMediumCpu, "LOCAL")});
  batches.push_back(
      {stored({h(0)}, std::nullopt, {}, kMediumStorage, "LOCAL"), removed({h(2)}, kMediumGpu)});
  batches.push_back({removed({h(0), h(1)}, kMediumCpu, "LOCAL")});
  batches.push_back({AllBlocksCleared{}});
  // 20 events (array16), 16 hashes and 256 tokens each (array16, every
  // integer width up to uint32).
  std::vector<KvEvent> big;
  for (uint64_t e = 0; e < 20; ++e) {
    std::vector<uint64_t> hashes;
    for (uint64_t b = 0; b < 16; ++b) hashes.push_back(h(100 + e * 16 + b));
    big.push_back(stored(hashes,
                         e == 0 ? std::nullopt : std::optional<uint64_t>(h(100 + e * 16 - 1)),
                         token_range(static_cast<int32_t>(e) * 7000, 256, 601), kMediumGpu));
  }
  batches.push_back(std::move(big));
  batches.push_back({removed({h(3)}, kMediumStorage, "REMOTE"), AllBlocksCleared{}});
  return batches;
}

bool wait_published(const KvEventPublisher& p, int64_t n) {
  for (int i = 0; i < 1000 && p.num_published() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return p.num_published() >= n;
}

int run(int argc, char** argv) {
  KvEventsConfig config;
  config.enable_kv_cache_events = true;
  config.publisher = "zmq";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--endpoint") {
      config.endpoint = value;
    } else if (flag == "--replay") {
      config.replay_endpoint = value;
    } else if (flag == "--topic") {
      config.topic = value;
    } else if (flag == "--encoding") {
      config.event_encoding = value == "map" ? EventEncoding::kMap : EventEncoding::kArray;
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  auto created = KvEventPublisher::create(config);
  if (!created.ok()) {
    std::cerr << created.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<KvEventPublisher> owner = std::move(created).value();
  KvEventPublisher& publisher = *owner;
  const std::vector<std::vector<KvEvent>> batches = script_batches();
  constexpr int64_t kNumBeforeReady = 2;
  for (int64_t i = 0; i < kNumBeforeReady; ++i) publisher.publish(batches[i]);
  if (!wait_published(publisher, kNumBeforeReady)) return 1;
  std::cout << "READY " << publisher.pub_endpoint() << " " << publisher.replay_endpoint()
            << std::endl;

  std::string line;
  if (!std::getline(std::cin, line) || line != "go") return 1;
  for (size_t i = kNumBeforeReady; i < batches.size(); ++i) publisher.publish(batches[i]);
  if (!wait_published(publisher, static_cast<int64_t>(batches.size()))) return 1;
  std::cout << "SENT " << batches.size() << std::endl;

  while (std::getline(std::cin, line) && line != "quit") {
  }
  const int64_t published = publisher.num_published();
  const int64_t dropped = publisher.num_dropped();
  owner.reset();  // flushes, closes the sockets, joins the thread
  std::cout << "DONE published=" << published << " dropped=" << dropped << std::endl;
  return 0;
}

}  // namespace
}  // namespace strata::events

int main(int argc, char** argv) { return strata::events::run(argc, argv); }
