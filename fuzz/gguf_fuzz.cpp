// The GGUF reader on arbitrary bytes, then what a load does with what it read: hyper-parameters and
// their checks against the tensors, and binding every tensor to a backend. A ts::Error is the only
// acceptable failure; anything else (a crash, a sanitizer report, another exception, a huge
// allocation) is a bug.
#include <cstddef>
#include <cstdint>

#include "fuzz/memory_file.h"
#include "gguf/gguf.h"
#include "model/hparams.h"
#include "model/model.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ts::fuzz::MemoryFile file(data, size);
  try {
    const auto g = ts::GgufFile::open(file.path());
    size_t sink = 0;
    for (const auto& [key, value] : g->metadata()) sink += value.to_string(4).size();
    // Every tensor's first and last byte must lie inside the mapping.
    for (const ts::GgufTensor& t : g->tensors()) sink += t.data[0] + t.data[t.n_bytes - 1];
    ts::HParams::from_gguf(*g);
    auto be = ts::make_cpu_backend(1);
    ts::Model::load(file.path(), *be);
    return sink == 0xdeadbeef;  // keeps the reads above from being optimised away
  } catch (const ts::Error&) {
  }
  return 0;
}
