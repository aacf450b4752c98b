// Fuzz target: the GGUF header, metadata and tensor infos of a downloaded
// model file, then the model-config and weight mappings that read them. The input
// is the whole file, written to an in-memory file and mapped like a real one.
#include <cstddef>
#include <cstdint>

#include "memory_file.h"
#include "model/loader/gguf.h"
#include "model/loader/gguf_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static strata::fuzz::MemoryFile memory_file;
  auto file = strata::model::GgufFile::open(memory_file.write(data, size));
  if (!file.ok()) return 0;
  (void)strata::model::gguf_model_config(file.value());
  (void)strata::model::gguf_weight_source(file.value());
  return 0;
}
