// Option checks for `synth`. Shape rules are the ones llama.cpp's loaders assert (GQA head counts,
// top-k within the expert count, which keys each architecture reads); row-length vs block-size rules
// are checked per tensor on the plan (synth_tensors.cpp), where the actual row lengths are known.
#include "synth/synth_config.h"

#include <strings.h>

#include "quant/kernels.h"
#include "util/error.h"

namespace ts::synth {

GgmlType parse_weight_type(std::string_view name, std::string_view option) {
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const auto info = type_info(raw);
    if (!info || info->name.size() != name.size()) continue;
    if (strncasecmp(info->name.data(), name.data(), name.size()) != 0) continue;
    const auto t = static_cast<GgmlType>(raw);
    if (!quant::can_quantize_weights(t))
      fail("{} {}: synth cannot write this type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4, Q4_K, Q5_K, Q6_K)", option, name);
    return t;
  }
  fail("{} {}: unknown weight type", option, name);
}

namespace {

// Dimensions are bounded so that every product below stays far from 64-bit overflow.
constexpr int64_t kMaxDim = int64_t{1} << 24;

void positive(int64_t v, const char* option) {
  if (v <= 0 || v > kMaxDim) fail("{} must be between 1 and {}, got {}", option, kMaxDim, v);
}

}  // namespace

void validate(const SynthConfig& c) {
  const std::pair<GgmlType, const char*> types[] = {
      {c.dense_type, "--dense-type"}, {c.expert_type, "--expert-type"}, {c.embd_type, "--embd-type"}};
  for (const auto& [t, option] : types)
    if (!quant::can_quantize_weights(t)) fail("{} {}: synth cannot write this type", option, type_name(t));
  positive(c.layers, "--layers");
  positive(c.embd, "--embd");
  positive(c.heads, "--heads");
  positive(c.kv_heads, "--kv-heads");
  positive(c.head_dim, "--head-dim");
  positive(c.vocab, "--vocab");
  positive(c.ctx, "--ctx");
  if (c.heads % c.kv_heads != 0) fail("--heads {} is not a multiple of --kv-heads {}", c.heads, c.kv_heads);
  if (c.head_dim % 2 != 0) fail("--head-dim {} must be even (RoPE rotates pairs)", c.head_dim);

  const bool gpt_oss = c.arch == "gpt-oss";
  if (gpt_oss || c.arch == "qwen3moe") {
    if (!c.is_moe()) fail("--arch {} needs --experts > 0", c.arch);
    positive(c.expert_ff, "--expert-ff");
  } else if (c.expert_ff != 0) {
    fail("--expert-ff is not used by --arch {} ({})", c.family,
         c.arch == "llama" ? "llama MoE experts take their width from --ff" : "it has no experts");
  }
  if (c.arch == "qwen3" && c.is_moe()) fail("--arch qwen3 is dense; use --arch qwen3moe for experts");
  if (gpt_oss) {
    if (c.ff != 0) fail("--ff is not used by gpt-oss (every FFN is a mixture of experts; use --expert-ff)");
    positive(c.swa, "--swa");
  } else {
    positive(c.ff, "--ff");
    if (c.swa != 0) fail("--swa is only used by gpt-oss");
  }
  if (c.experts < 0) fail("--experts must not be negative, got {}", c.experts);
  if (c.is_moe()) {
    if (c.experts > 1024) fail("--experts {} is more than 1024", c.experts);
    if (c.experts_used <= 0 || c.experts_used > c.experts)
      fail("--experts-used {} must be between 1 and --experts {}", c.experts_used, c.experts);
  } else if (c.experts_used != 0) {
    fail("--experts-used {} given for a model without experts", c.experts_used);
  }
}

}  // namespace ts::synth
