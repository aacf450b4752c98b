// Fuzz target: --kv-transfer-config and --kv-events-config JSON parsing.
// Both come from the command line (untrusted text); any input must give a
// Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/kv_events_config.h"
#include "server/kv_transfer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)strata::server::parse_kv_transfer_config(text, /*block_size=*/16);
  (void)strata::server::parse_kv_events_config(text);
  return 0;
}
