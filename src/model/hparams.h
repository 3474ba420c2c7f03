// Hyper-parameters read from GGUF metadata under the `<arch>.` prefix. Every value a family needs
// is read here once, validated (a zero head count or a head_dim that does not divide is an error,
// not a division by zero later), checked against the tensors the file really holds (so no count
// from the metadata can size an allocation the file does not back), and then treated as fact by the
// forward pass. Metadata that would change the math in a way the engine does not implement (an
// unknown `<arch>.` key, another RoPE scaling type, soft-capping, another window pattern) is an error
// naming the key, never ignored.
#pragma once
#include <cstdint>
#include <string>

namespace ts {

class GgufFile;

struct HParams {
  std::string arch;
  int64_t n_vocab = 0, n_embd = 0, n_layer = 0, n_ctx_train = 0;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
  int64_t n_ff = 0;
  float norm_eps = 1e-5f;
  double rope_base = 10000.0;
  double rope_base_swa = 10000.0;  // rotary base of windowed layers, for families that use another one
  // rope.scaling.type = linear: positions are divided by this factor (1: none).
  double rope_linear_factor = 1.0;
  // YaRN (gpt-oss): factor 0 means no scaling.
  double yarn_factor = 0, yarn_orig_ctx = 0, yarn_beta_fast = 32, yarn_beta_slow = 1;
  int64_t sliding_window = 0;
  // Routed experts (0 = dense).
  int64_t n_expert = 0, n_expert_used = 0, n_ff_expert = 0;

  bool is_moe() const { return n_expert > 0; }
  static HParams from_gguf(const GgufFile& g);
};

}  // namespace ts
