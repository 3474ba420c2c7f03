// Preset shapes. `tiny` is for tests (a few MB, every row a multiple of 32 so Q8_0/MXFP4 fit);
// `mini` is a few hundred MB, enough to measure throughput; `20b`/`120b` are the real gpt-oss shapes
// (from the published configs), so a synthesized file has exactly the memory traffic of the real one.
#include "synth/synth_config.h"

#include "util/error.h"

namespace ts::synth {
namespace {

SynthConfig llama_like(std::string_view family, std::string_view preset) {
  SynthConfig c;
  if (preset == "tiny") {
    c.layers = 2, c.embd = 128, c.heads = 4, c.kv_heads = 2, c.head_dim = 32, c.ff = 256;
    c.vocab = 1024, c.ctx = 4096;
  } else if (preset == "mini") {
    c.layers = 8, c.embd = 1024, c.heads = 16, c.kv_heads = 4, c.head_dim = 64, c.ff = 2816;
    c.vocab = 32768, c.ctx = 8192;
  } else {
    fail("--preset '{}' is not available for --arch {} (tiny, mini; 20b and 120b are gpt-oss shapes)", preset, family);
  }
  return c;
}

SynthConfig gpt_oss(std::string_view preset) {
  SynthConfig c;
  c.arch = "gpt-oss";
  c.head_dim = 64, c.experts_used = 4, c.rope_base = 150000.0f, c.ctx = 131072;
  c.expert_type = GgmlType::MXFP4;
  if (preset == "tiny") {
    c.layers = 2, c.embd = 128, c.heads = 4, c.kv_heads = 2, c.experts = 16, c.expert_ff = 128;
    c.vocab = 1024, c.swa = 8;
  } else if (preset == "mini") {
    c.layers = 8, c.embd = 1024, c.heads = 16, c.kv_heads = 4, c.experts = 32, c.expert_ff = 1024;
    c.vocab = 32768, c.swa = 128;
  } else if (preset == "20b" || preset == "120b") {
    c.layers = preset == "20b" ? 24 : 36, c.experts = preset == "20b" ? 32 : 128;
    c.embd = 2880, c.heads = 64, c.kv_heads = 8, c.expert_ff = 2880, c.vocab = 201088, c.swa = 128;
  } else {
    fail("--preset '{}' is not available for gpt-oss (tiny, mini, 20b, 120b)", preset);
  }
  return c;
}

}  // namespace

SynthConfig preset_config(std::string_view family, std::string_view preset) {
  SynthConfig c;
  if (family == "llama") {
    c = llama_like(family, preset);
    c.arch = "llama";
  } else if (family == "mixtral") {
    c = llama_like(family, preset);
    c.arch = "llama";
    c.experts = 8, c.experts_used = 2;
    c.ff = preset == "tiny" ? 128 : 1024;
  } else if (family == "qwen3" || family == "qwen3moe") {
    c = llama_like(family, preset);
    c.arch = std::string(family);
    c.rope_base = 1000000.0f, c.rms_eps = 1e-6f;
    if (preset == "tiny") c.head_dim = 64;
    else c.head_dim = 128, c.ff = 3072;
    if (family == "qwen3moe") {
      c.experts = preset == "tiny" ? 16 : 32, c.experts_used = 4;
      c.expert_ff = preset == "tiny" ? 64 : 768;
    }
  } else if (family == "gpt-oss") {
    c = gpt_oss(preset);
  } else {
    fail("--arch '{}' is unknown (llama, mixtral, qwen3, qwen3moe, gpt-oss)", family);
  }
  c.family = std::string(family);
  c.preset = std::string(preset);
  return c;
}

}  // namespace ts::synth
