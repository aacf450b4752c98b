// vLLM's --kv-events-config JSON, turned into events::KvEventsConfig.
// Accepted keys (vLLM's KVEventsConfig, same defaults):
//
//   {"enable_kv_cache_events": false,
//    "publisher": "zmq" | "null",      default "zmq" when enabled, else "null"
//    "endpoint": "tcp://*:5557",        binds if it has "*", "::", ipc:// or inproc://
//    "replay_endpoint": null | "tcp://*:5558",
//    "buffer_steps": 10000,             batches kept for replay (>= 0)
//    "hwm": 100000,                     PUB high-water mark (>= 0)
//    "max_queue_size": 100000,          batches waiting to be sent (>= 1)
//    "topic": "",
//    "event_encoding": "array" | "map"} Strata: the event layout, see
//                                       events/kv_event.h (default "array")
//
// Unknown keys and wrong types are errors naming the key. Called once at
// startup (any thread).
#pragma once

#include <string>

#include "base/status.h"
#include "events/kv_event_publisher.h"

namespace strata::server {

StatusOr<events::KvEventsConfig> parse_kv_events_config(const std::string& json);

}  // namespace strata::server
