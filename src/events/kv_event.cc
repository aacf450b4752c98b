#include "events/kv_event.h"

#include "base/check.h"
#include "events/msgpack_writer.h"

namespace strata::events {
namespace {

uint32_t checked_size(size_t n) {
  STRATA_CHECK(n <= UINT32_MAX) << "KV event list of " << n << " entries";
  return static_cast<uint32_t>(n);
}

void write_hashes(MsgpackWriter& w, const std::vector<uint64_t>& hashes) {
  w.write_array_header(checked_size(hashes.size()));
  for (uint64_t h : hashes) w.write_uint(h);
}

void write_optional_str(MsgpackWriter& w, const std::string& s) {
  if (s.empty()) {
    w.write_nil();
  } else {
    w.write_str(s);
  }
}

// Writes one event in either layout. In the map layout each value is preceded
// by its key; in the array layout the keys are dropped and the tag is the
// first element.
class EventWriter {
 public:
  EventWriter(MsgpackWriter& w, EventEncoding encoding)
      : w_(w), is_map_(encoding == EventEncoding::kMap) {}

  void operator()(const BlockStored& e) {
    const bool has_locality = is_map_ && !e.locality.empty();
    begin("BlockStored", 7 + (has_locality ? 1 : 0));
    key("block_hashes");
    write_hashes(w_, e.block_hashes);
    key("parent_block_hash");
    if (e.parent_block_hash) {
      w_.write_uint(*e.parent_block_hash);
    } else {
      w_.write_nil();
    }
    key("token_ids");
    w_.write_array_header(checked_size(e.token_ids.size()));
    for (int32_t t : e.token_ids) w_.write_int(t);
    key("block_size");
    w_.write_int(e.block_size);
    key("lora_id");
    if (e.lora_id) {
      w_.write_int(*e.lora_id);
    } else {
      w_.write_nil();
    }
    key("medium");
    write_optional_str(w_, e.medium);
    key("lora_name");
    w_.write_nil();
    if (has_locality) {
      key("locality");
      w_.write_str(e.locality);
    }
  }

  void operator()(const BlockRemoved& e) {
    const bool has_locality = is_map_ && !e.locality.empty();
    begin("BlockRemoved", 2 + (has_locality ? 1 : 0));
    key("block_hashes");
    write_hashes(w_, e.block_hashes);
    key("medium");
    write_optional_str(w_, e.medium);
    if (has_locality) {
      key("locality");
      w_.write_str(e.locality);
    }
  }

  void operator()(const AllBlocksCleared&) { begin("AllBlocksCleared", 0); }

 private:
  // msgspec's tag: the class name, first array element or the "type" entry.
  void begin(const char* tag, uint32_t num_fields) {
    if (is_map_) {
      w_.write_map_header(num_fields + 1);
      w_.write_str("type");
    } else {
      w_.write_array_header(num_fields + 1);
    }
    w_.write_str(tag);
  }
  void key(const char* name) {
    if (is_map_) w_.write_str(name);
  }

  MsgpackWriter& w_;
  bool is_map_;
};

}  // namespace

std::string encode_event_batch(double ts, const std::vector<KvEvent>& events,
                               EventEncoding encoding, int64_t data_parallel_rank) {
  MsgpackWriter w;
  w.write_array_header(3);
  w.write_float64(ts);
  w.write_array_header(checked_size(events.size()));
  EventWriter event_writer(w, encoding);
  for (const KvEvent& e : events) std::visit(event_writer, e);
  w.write_int(data_parallel_rank);
  return w.take();
}

}  // namespace strata::events
