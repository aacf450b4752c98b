/*
 * Strata secondary-tier plugin ABI, version 1: a stable C interface through
 * which a shared library adds a KV tier below host memory (an object store, a
 * cache service, a custom device) without rebuilding Strata.
 *
 * Configure it as one entry of kv_connector_extra_config.secondary_tiers:
 *   {"type": "my_tier", "module_path": "/path/libmy_tier.so", ...own keys...}
 * Strata dlopen()s module_path, calls strata_tier_plugin_v1() for the vtable,
 * checks abi_version, and calls create() with the entry as JSON text.
 *
 * Semantics are those of offload::SecondaryTier (src/offload/tiers/
 * secondary_tier.h):
 *  - Every function is called from one Strata thread (the engine thread) and
 *    must not block on I/O: do I/O on threads of your own.
 *  - Chunks are fixed-size byte strings (slot_bytes) named by a 128-bit key.
 *    Stores read host slot `slots[i]`; loads fill it. A slot named in a job
 *    stays valid and reserved for the plugin until that job's result has been
 *    returned by poll_finished(); afterwards the plugin must not touch it.
 *  - Job arrays (keys, slots) are valid only during the submit call: copy them.
 *  - Every submitted job yields exactly one result from a later
 *    poll_finished(). A load reports ok only if the slot now holds exactly the
 *    bytes stored under that key (verify: Strata trusts ok). A failed load
 *    should also forget the key so the next lookup answers MISS.
 *  - lookup answers HIT, MISS, or RETRY ("not known yet; ask again later").
 * Strings are UTF-8 and NUL-terminated. No C++ types cross this boundary.
 */
#ifndef STRATA_TIER_PLUGIN_H_
#define STRATA_TIER_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_TIER_ABI_VERSION 1u
#define STRATA_TIER_ENTRY_SYMBOL "strata_tier_plugin_v1"

typedef struct strata_tier strata_tier; /* the plugin's instance, opaque to Strata */

typedef enum {
  STRATA_LOOKUP_HIT = 0,
  STRATA_LOOKUP_MISS = 1,
  STRATA_LOOKUP_RETRY = 2
} strata_lookup_result;

typedef struct {
  uint64_t low;
  uint64_t high;
} strata_chunk_key;

typedef struct {
  const char* config_json;      /* this tier's secondary_tiers entry */
  const char* namespace_id;     /* 32 hex digits: model + KV layout; keep formats apart */
  const char* namespace_string; /* human-readable form of the same */
  uint8_t* region_base;         /* host tier memory: slot i at base + i * slot_bytes */
  uint64_t num_slots;
  uint64_t slot_bytes;          /* bytes of one chunk */
} strata_tier_init;

typedef struct {
  int64_t job_id;
  const strata_chunk_key* keys;
  const int64_t* slots;
  uint64_t num_keys;
} strata_tier_job;

typedef struct {
  int64_t job_id;
  const uint8_t* ok;  /* num_keys flags (1 = ok), valid until the next poll_finished */
  uint64_t num_keys;
  uint64_t bytes;     /* payload bytes moved */
  double seconds;     /* wall time of the I/O */
} strata_tier_result;

typedef struct {
  int64_t chunk_lookups; /* answered HIT or MISS */
  int64_t chunk_hits;
  int64_t load_bytes;
  double load_seconds;
  int64_t store_bytes;
  double store_seconds;
  int64_t load_failures;
  int64_t store_failures;
  int64_t stores_skipped;
  int64_t evictions;
  int64_t used_bytes;
  int64_t capacity_bytes; /* 0 = unbounded */
  int64_t num_chunks;
} strata_tier_stats;

typedef struct {
  uint32_t abi_version; /* STRATA_TIER_ABI_VERSION */
  /* Returns NULL on failure after writing a message into error[error_len]. */
  strata_tier* (*create)(const strata_tier_init* init, char* error, size_t error_len);
  void (*destroy)(strata_tier* tier); /* after drain(); joins the plugin's threads */
  strata_lookup_result (*lookup)(strata_tier* tier, strata_chunk_key key);
  void (*submit_store)(strata_tier* tier, const strata_tier_job* job);
  void (*submit_load)(strata_tier* tier, const strata_tier_job* job);
  /* Writes up to max results into out; returns how many. */
  size_t (*poll_finished)(strata_tier* tier, strata_tier_result* out, size_t max);
  void (*drain)(strata_tier* tier); /* blocks until every submitted job is done */
  void (*stats)(strata_tier* tier, strata_tier_stats* out); /* any thread */
} strata_tier_vtable;

/* The one symbol a plugin exports. */
typedef const strata_tier_vtable* (*strata_tier_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_TIER_PLUGIN_H_ */
