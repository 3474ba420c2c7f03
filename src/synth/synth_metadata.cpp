// Key names follow gguf-py's constants (Keys.LLM, Keys.Attention, Keys.Rope); which ones are written
// per architecture follows what llama.cpp's loader for it requires.
#include "synth/synth_metadata.h"

#include <algorithm>

#include "util/error.h"

namespace ts::synth {
namespace {

// llama.cpp's general.file_type (enum llama_ftype) for "most matrices are of type t"; -1 if none.
int file_type_of(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q6_K: return 18;
    case GgmlType::BF16: return 32;
    default: return -1;  // K-quant "mixes" (Q4_K_M, ...) name recipes, not a single type
  }
}

// The type that holds most of the bytes decides the file type; MXFP4 experts are "MXFP4_MOE".
int file_type(const std::vector<TensorSpec>& tensors) {
  uint64_t best_bytes = 0;
  GgmlType best = GgmlType::F32;
  std::vector<std::pair<GgmlType, uint64_t>> totals;
  for (const auto& t : tensors) {
    if (t.dims.size() < 2) continue;
    const uint64_t bytes = t.n_elements() / type_info(t.type).block_elems * type_info(t.type).block_bytes;
    auto it = std::find_if(totals.begin(), totals.end(), [&](auto& e) { return e.first == t.type; });
    if (it == totals.end()) it = totals.insert(totals.end(), {t.type, 0});
    it->second += bytes;
    if (it->second > best_bytes) best_bytes = it->second, best = t.type;
  }
  return best == GgmlType::MXFP4 ? 38 : file_type_of(best);
}

}  // namespace

int64_t vocab_size_of(const GgufFile& vocab) {
  if (!vocab.has("tokenizer.ggml.tokens")) fail("--vocab-from '{}' has no tokenizer.ggml.tokens", vocab.path());
  return static_cast<int64_t>(vocab.get_string_array("tokenizer.ggml.tokens").size());
}

void write_metadata(GgufWriter& w, const SynthConfig& c, const std::vector<TensorSpec>& tensors, const GgufFile* vocab) {
  const std::string a = c.arch + ".";
  w.set_string("general.architecture", c.arch);
  w.set_string("general.name", fmt::format("synthetic {} {} (seed {})", c.family, c.preset, c.seed));
  if (const int ft = file_type(tensors); ft >= 0) w.set_u32("general.file_type", static_cast<uint32_t>(ft));

  auto u32 = [&](const char* key, int64_t v) { w.set_u32(a + key, static_cast<uint32_t>(v)); };
  u32("context_length", c.ctx);
  u32("embedding_length", c.embd);
  u32("block_count", c.layers);
  // gpt-oss's converter writes the expert width here too; the loaders of the others read ff.
  u32("feed_forward_length", c.arch == "gpt-oss" ? c.expert_ff : c.ff);
  u32("attention.head_count", c.heads);
  u32("attention.head_count_kv", c.kv_heads);
  u32("attention.key_length", c.head_dim);
  u32("attention.value_length", c.head_dim);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  w.set_f32(a + "rope.freq_base", c.rope_base);
  u32("rope.dimension_count", c.head_dim);
  u32("vocab_size", c.vocab);
  if (c.is_moe()) {
    u32("expert_count", c.experts);
    u32("expert_used_count", c.experts_used);
    if (c.arch != "llama") u32("expert_feed_forward_length", c.expert_ff);
  }
  if (c.arch == "gpt-oss") {
    u32("attention.sliding_window", c.swa);
    w.set_string(a + "rope.scaling.type", "yarn");
    w.set_f32(a + "rope.scaling.factor", 32.0f);
    u32("rope.scaling.original_context_length", 4096);
    w.set_f32(a + "rope.scaling.yarn_beta_fast", 32.0f);
    w.set_f32(a + "rope.scaling.yarn_beta_slow", 1.0f);
  }

  if (!vocab) {
    w.set_string("tokenizer.ggml.model", "none");
    return;
  }
  for (const auto& [key, value] : vocab->metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
}

}  // namespace ts::synth
