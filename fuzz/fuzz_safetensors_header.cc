// Fuzz target: the safetensors header (JSON length prefix, tensor table,
// dtypes, shapes, offsets) of a downloaded model file. The input is the whole
// file, written to an in-memory file and mapped like a real one.
#include <cstddef>
#include <cstdint>

#include "base/mapped_file.h"
#include "memory_file.h"
#include "model/loader/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static strata::fuzz::MemoryFile memory_file;
  auto mapped = strata::MappedFile::open(memory_file.write(data, size));
  if (!mapped.ok()) return 0;
  (void)strata::model::parse_safetensors(mapped.value());
  return 0;
}
