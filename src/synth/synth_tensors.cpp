// Tensor names and shapes per architecture, following llama.cpp's loaders (src/models/llama.cpp,
// qwen3.cpp, qwen3moe.cpp, openai-moe.cpp): a file that matches them loads there unchanged.
#include "synth/synth_tensors.h"

#include <cmath>

#include "util/error.h"

namespace ts::synth {

uint64_t TensorSpec::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n;
}

namespace {

class Planner {
 public:
  // A weight matrix; `row_option` names the option that sets its row length, for the error.
  void matrix(const std::string& name, GgmlType type, std::vector<uint64_t> dims, const char* row_option,
              float gain = 1.0f) {
    const uint32_t block = type_info(type).block_elems;
    if (dims[0] % block != 0)
      fail("tensor '{}' has rows of {} elements ({}), not a multiple of the {} block size {}; change {} or the type",
           name, dims[0], row_option, type_name(type), block, row_option);
    const float stddev = gain / std::sqrt(static_cast<float>(dims[0]));
    out_.push_back({name, type, std::move(dims), 0.0f, stddev});
  }
  void vector(const std::string& name, std::vector<uint64_t> dims, float mean, float stddev) {
    out_.push_back({name, GgmlType::F32, std::move(dims), mean, stddev});
  }
  void norm(const std::string& name, uint64_t n) { vector(name, {n}, 1.0f, 0.1f); }
  void bias(const std::string& name, std::vector<uint64_t> dims) { vector(name, std::move(dims), 0.0f, 0.05f); }

  std::vector<TensorSpec> take() { return std::move(out_); }

 private:
  std::vector<TensorSpec> out_;
};

}  // namespace

std::vector<TensorSpec> plan_tensors(const SynthConfig& c) {
  Planner p;
  const uint64_t E = c.embd, V = c.vocab, D = c.head_dim;
  const uint64_t Q = c.heads * D, KV = c.kv_heads * D, X = c.experts, Fx = c.expert_width();
  const bool gpt_oss = c.arch == "gpt-oss", qk_norm = c.arch == "qwen3" || c.arch == "qwen3moe";
  const GgmlType dt = c.dense_type, et = c.expert_type;

  // The embedding is looked up, not multiplied: unit variance, like a trained one after its norm.
  p.matrix("token_embd.weight", c.embd_type, {E, V}, "--embd", std::sqrt(static_cast<float>(E)));
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string b = fmt::format("blk.{}.", i);
    p.norm(b + "attn_norm.weight", E);
    p.matrix(b + "attn_q.weight", dt, {E, Q}, "--embd");
    p.matrix(b + "attn_k.weight", dt, {E, KV}, "--embd");
    p.matrix(b + "attn_v.weight", dt, {E, KV}, "--embd");
    p.matrix(b + "attn_output.weight", dt, {Q, E}, "--heads x --head-dim");
    if (qk_norm) {
      p.norm(b + "attn_q_norm.weight", D);
      p.norm(b + "attn_k_norm.weight", D);
    }
    if (gpt_oss) {
      p.bias(b + "attn_q.bias", {Q});
      p.bias(b + "attn_k.bias", {KV});
      p.bias(b + "attn_v.bias", {KV});
      p.bias(b + "attn_output.bias", {E});
      p.vector(b + "attn_sinks.weight", {static_cast<uint64_t>(c.heads)}, 0.0f, 1.0f);
      p.norm(b + "post_attention_norm.weight", E);
    } else {
      p.norm(b + "ffn_norm.weight", E);
    }
    if (c.is_moe()) {
      const char* width = c.arch == "llama" ? "--ff" : "--expert-ff";
      // Router logits with a spread of about 2 make the top-k choice clear but not one-hot.
      p.vector(b + "ffn_gate_inp.weight", {E, X}, 0.0f, 2.0f / std::sqrt(static_cast<float>(E)));
      p.matrix(b + "ffn_gate_exps.weight", et, {E, Fx, X}, "--embd");
      p.matrix(b + "ffn_up_exps.weight", et, {E, Fx, X}, "--embd");
      p.matrix(b + "ffn_down_exps.weight", et, {Fx, E, X}, width);
      if (gpt_oss) {
        p.vector(b + "ffn_gate_inp.bias", {X}, 0.0f, 0.5f);
        p.bias(b + "ffn_gate_exps.bias", {Fx, X});
        p.bias(b + "ffn_up_exps.bias", {Fx, X});
        p.bias(b + "ffn_down_exps.bias", {E, X});
      }
    } else {
      const uint64_t F = c.ff;
      p.matrix(b + "ffn_gate.weight", dt, {E, F}, "--embd");
      p.matrix(b + "ffn_up.weight", dt, {E, F}, "--embd");
      p.matrix(b + "ffn_down.weight", dt, {F, E}, "--ff");
    }
  }
  p.norm("output_norm.weight", E);
  p.matrix("output.weight", dt, {E, V}, "--embd");
  return p.take();
}

}  // namespace ts::synth
