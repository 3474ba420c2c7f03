// `turbospark synth`: writes a GGUF model with deterministic random weights (from --seed) in the
// exact layout of a real architecture, so the engine and llama.cpp can be run, compared and
// benchmarked at any size without downloading weights.
#include <cstdio>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "synth/synthesize.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct SynthArgs {
  std::string arch, preset = "tiny", out, vocab_from;
  uint64_t seed = 0;
  std::optional<int64_t> layers, embd, heads, kv_heads, head_dim, ff, experts, experts_used, expert_ff, vocab, ctx, swa;
  std::optional<std::string> dense_type, expert_type, embd_type;
  int threads = 0;
  bool force = false;
};

synth::SynthConfig make_config(const SynthArgs& a) {
  synth::SynthConfig c = synth::preset_config(a.arch, a.preset);
  c.seed = a.seed;
  auto set = [](int64_t& field, const std::optional<int64_t>& v) {
    if (v) field = *v;
  };
  set(c.layers, a.layers), set(c.embd, a.embd), set(c.heads, a.heads), set(c.kv_heads, a.kv_heads);
  set(c.head_dim, a.head_dim), set(c.ff, a.ff), set(c.experts, a.experts), set(c.experts_used, a.experts_used);
  set(c.expert_ff, a.expert_ff), set(c.vocab, a.vocab), set(c.ctx, a.ctx), set(c.swa, a.swa);
  if (a.dense_type) c.dense_type = synth::parse_weight_type(*a.dense_type, "--dense-type");
  if (a.expert_type) c.expert_type = synth::parse_weight_type(*a.expert_type, "--expert-type");
  // The embedding follows the dense type unless given: "Q8_0 dense" means the whole non-expert part.
  c.embd_type = a.embd_type ? synth::parse_weight_type(*a.embd_type, "--embd-type") : c.dense_type;
  if (!a.vocab_from.empty() && a.vocab)
    fail("--vocab and --vocab-from conflict: the vocabulary size follows '{}'", a.vocab_from);
  c.vocab_from = a.vocab_from;
  return c;
}

void run(const SynthArgs& a) {
  const synth::SynthConfig c = make_config(a);
  const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  const synth::SynthResult r = synth::synthesize(c, a.out, pool, {.force = a.force, .progress = true});
  const double mib = static_cast<double>(r.bytes) / (1024.0 * 1024.0);
  std::fprintf(stderr, "synth: wrote %s: %zu tensors, %.1f MiB in %.1f s (%.0f MB/s, %d threads)\n", a.out.c_str(),
               r.tensors, mib, r.seconds, r.seconds > 0 ? static_cast<double>(r.bytes) / 1e6 / r.seconds : 0.0, threads);
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto args = std::make_shared<SynthArgs>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a GGUF model with deterministic random weights");
  cmd->add_option("--arch", args->arch, "llama, mixtral (llama with experts), qwen3, qwen3moe, gpt-oss")->required();
  cmd->add_option("--preset", args->preset, "tiny, mini, 20b, 120b (the last two: gpt-oss only)")->capture_default_str();
  cmd->add_option("-o,--output", args->out, "output GGUF file ('-' for stdout)")->required();
  cmd->add_option("--seed", args->seed, "weights are a pure function of the seed")->capture_default_str();
  cmd->add_option("--layers", args->layers, "number of blocks");
  cmd->add_option("--embd", args->embd, "embedding width");
  cmd->add_option("--heads", args->heads, "query heads");
  cmd->add_option("--kv-heads", args->kv_heads, "key/value heads (divides --heads)");
  cmd->add_option("--head-dim", args->head_dim, "width of one head");
  cmd->add_option("--ff", args->ff, "dense FFN width (llama MoE: expert width)");
  cmd->add_option("--experts", args->experts, "experts per layer (0: dense)");
  cmd->add_option("--experts-used", args->experts_used, "experts chosen per token");
  cmd->add_option("--expert-ff", args->expert_ff, "expert FFN width (qwen3moe, gpt-oss)");
  cmd->add_option("--vocab", args->vocab, "vocabulary size");
  cmd->add_option("--ctx", args->ctx, "training context length");
  cmd->add_option("--swa", args->swa, "sliding window (gpt-oss)");
  cmd->add_option("--dense-type", args->dense_type, "attention/dense FFN/output type (default Q8_0)");
  cmd->add_option("--expert-type", args->expert_type, "expert type (default MXFP4 for gpt-oss, else Q8_0)");
  cmd->add_option("--embd-type", args->embd_type, "token embedding type (default: --dense-type)");
  cmd->add_option("--vocab-from", args->vocab_from, "copy the tokenizer.* keys of this GGUF")->check(CLI::ExistingFile);
  cmd->add_option("-t,--threads", args->threads, "threads (default: all cores)");
  cmd->add_flag("--force", args->force, "replace an existing output file");
  cmd->callback([args] { run(*args); });
}

}  // namespace ts::cli
