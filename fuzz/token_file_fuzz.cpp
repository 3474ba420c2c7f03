// The token-id file parser on arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/token_file.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ts::parse_token_ids(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const ts::Error&) {
  }
  return 0;
}
