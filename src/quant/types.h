// The GGUF/ggml tensor element types TurboSpark knows, with their block geometry. Numbering is
// ggml's (it is what GGUF files store). A type is "supported" when it has a decoder and a dot kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ts {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct TypeInfo {
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
  bool supported;        // TurboSpark can decode and compute with it
};

// nullopt for a number ggml never assigned (a corrupt or future file).
std::optional<TypeInfo> type_info(uint32_t raw);
const TypeInfo& type_info(GgmlType t);
inline std::string_view type_name(GgmlType t) { return type_info(t).name; }

// Bytes of a row of n elements; n must be a multiple of the block size (checked by the caller).
inline uint64_t row_bytes(GgmlType t, uint64_t n) {
  const TypeInfo& ti = type_info(t);
  return n / ti.block_elems * ti.block_bytes;
}

}  // namespace ts
