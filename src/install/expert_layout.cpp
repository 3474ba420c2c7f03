#include "install/expert_layout.h"

#include <fmt/format.h>

namespace ts {

const char* expert_part_name(int p) {
  static const char* names[kExpertParts] = {"gate", "up", "down", "gate_bias", "up_bias", "down_bias"};
  return names[p];
}

std::string expert_tensor_name(int64_t layer, int p) {
  static const char* proj[3] = {"gate", "up", "down"};
  return fmt::format("blk.{}.ffn_{}_exps.{}", layer, proj[p % 3], p < 3 ? "weight" : "bias");
}

bool is_expert_tensor_name(const std::string& name) {
  return name.starts_with("blk.") && name.find("_exps.") != std::string::npos;
}

BlobLayout blob_layout(const std::array<uint64_t, kExpertParts>& part_bytes) {
  BlobLayout b;
  uint64_t at = 0;
  for (int p = 0; p < kExpertParts; ++p) {
    b.offset[p] = at;
    at = align_up(at + part_bytes[p], kBlobAlign);
  }
  b.bytes = at;
  return b;
}

}  // namespace ts
