// GPT-2's byte-to-unicode mapping: byte-level BPE vocabularies (GGUF "gpt2" model) store every token
// and merge as printable characters, one per byte. We convert them back to raw bytes at load time so
// that the BPE works on the input bytes directly.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ts {

// The raw bytes a GPT-2-mapped string stands for; nullopt if some character is not in the mapping
// (e.g. added tokens stored verbatim, like a run of spaces).
std::optional<std::string> gpt2_unicode_to_bytes(std::string_view mapped);

}  // namespace ts
