// Tokenizers from GGUF vocabularies on arbitrary bytes: loading, then encoding and decoding a fixed
// text (with and without special tokens) through whatever vocabulary the bytes describe.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_text.h"
#include "fuzz/memory_file.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ts::fuzz::MemoryFile file(data, size);
  try {
    const auto g = ts::GgufFile::open(file.path());
    const auto tok = ts::Tokenizer::from_gguf(*g);
    if (tok) ts::fuzz::exercise(*tok);
  } catch (const ts::Error&) {
  }
  return 0;
}
