// What `turbospark synth` builds: an architecture, its dimensions and weight types. A preset fills
// every field; command-line overrides replace single fields; validate() then rejects any combination
// that would give a model llama.cpp (or TurboSpark) cannot load, before a single byte is written.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "quant/types.h"

namespace ts::synth {

struct SynthConfig {
  std::string arch;    // GGUF architecture: "llama", "qwen3", "qwen3moe" or "gpt-oss"
  std::string family;  // what was asked for ("mixtral" is llama with experts), for general.name
  std::string preset;
  uint64_t seed = 0;

  int64_t layers = 0, embd = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t ff = 0;           // dense FFN width; llama MoE also uses it as the expert width
  int64_t experts = 0, experts_used = 0;
  int64_t expert_ff = 0;    // expert width for qwen3moe and gpt-oss
  int64_t vocab = 0, ctx = 0;
  int64_t swa = 0;          // gpt-oss sliding window
  float rope_base = 10000.0f, rms_eps = 1e-5f;

  GgmlType dense_type = GgmlType::Q8_0;   // attention and dense FFN matrices, output.weight
  GgmlType expert_type = GgmlType::Q8_0;  // ffn_{gate,up,down}_exps
  GgmlType embd_type = GgmlType::Q8_0;    // token_embd.weight

  std::string vocab_from;  // GGUF whose tokenizer.* keys are copied (empty: no vocabulary)

  bool is_moe() const { return experts > 0; }
  // The width of one expert's hidden layer, wherever the architecture keeps it.
  int64_t expert_width() const { return arch == "llama" ? ff : expert_ff; }
};

// Families: llama, mixtral, qwen3, qwen3moe, gpt-oss. Presets: tiny, mini, and (gpt-oss only) 20b, 120b.
SynthConfig preset_config(std::string_view family, std::string_view preset);

// A weight type by its ggml name (case-insensitive), restricted to the ones synth can quantize to.
GgmlType parse_weight_type(std::string_view name, std::string_view option);

// Throws ts::Error naming the option at fault.
void validate(const SynthConfig& c);

}  // namespace ts::synth
