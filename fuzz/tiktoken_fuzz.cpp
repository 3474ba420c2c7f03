// Tokenizers from .tiktoken rank files on arbitrary bytes: loading, then encoding and decoding a
// fixed text through the ranks the bytes list.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_text.h"
#include "fuzz/memory_file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ts::fuzz::MemoryFile file(data, size);
  try {
    const auto tok = ts::Tokenizer::from_tiktoken(file.path(), "o200k_base", {});
    ts::fuzz::exercise(*tok);
  } catch (const ts::Error&) {
  }
  return 0;
}
