// How one routed expert is laid out as a single blob: its parts (gate, up and down matrices and, for
// gpt-oss, their f32 biases) back to back, each starting on a 4 KiB boundary, the blob a whole
// number of 4 KiB pages. An install directory stores every expert this way (one read per expert,
// fit for O_DIRECT), and an expert-cache slot uses the same layout whatever the source file, so a
// part's bytes sit at the same place in a slot however they were read.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace ts {

enum ExpertPart : int { kGate, kUp, kDown, kGateBias, kUpBias, kDownBias };
inline constexpr int kExpertParts = 6;
inline constexpr uint64_t kBlobAlign = 4096;

// The GGUF tensor holding part `p` of every expert of `layer` ("blk.3.ffn_up_exps.weight").
std::string expert_tensor_name(int64_t layer, int p);
const char* expert_part_name(int p);  // "gate", "up", "down", "gate_bias", "up_bias", "down_bias"
// Whether a GGUF tensor holds routed experts ("blk.N.ffn_*_exps.*"): what pack moves out of the
// resident file, and what the loader does not prefault.
bool is_expert_tensor_name(const std::string& name);

inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
inline uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }

struct BlobLayout {
  std::array<uint64_t, kExpertParts> offset{};  // of each part inside the blob
  uint64_t bytes = 0;                            // the blob's size, a multiple of kBlobAlign
};
// part_bytes[p] = 0 for absent parts (no biases).
BlobLayout blob_layout(const std::array<uint64_t, kExpertParts>& part_bytes);

}  // namespace ts
