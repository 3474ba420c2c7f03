#include "cli/generation_options.h"

#include <algorithm>
#include <ctime>
#include <random>

#include "util/error.h"

namespace ts::cli {

void add_generation_options(CLI::App* sub, GenerationOptions& o) {
  add_model_options(sub, o.model, false);
  SamplerConfig& s = o.sampler;
  sub->add_option("-n,--n-predict", o.n_predict, "maximum tokens to generate")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--temp", s.temperature, "temperature (0 = greedy)");
  sub->add_option("--top-k", s.top_k, "top-k filter (0 = off)");
  sub->add_option("--top-p", s.top_p, "top-p (nucleus) filter (1 = off)");
  sub->add_option("--min-p", s.min_p, "min-p filter relative to the most likely token (0 = off)");
  sub->add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty (1 = off)");
  sub->add_option("--repeat-last-n", s.repeat_last_n, "tokens of history the penalties look at");
  sub->add_option("--presence-penalty", s.presence_penalty, "presence penalty (0 = off)");
  sub->add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (0 = off)");
  sub->add_option("--seed", o.seed, "random seed (default: random, printed)");
  sub->add_option("--chat-template", o.chat_template, "chat format when the model's template is not recognised: chatml, llama3, gemma, phi3, harmony");
  sub->add_option("--system", o.system, "system prompt");
  sub->add_option("--reasoning-effort", o.reasoning_effort, "Harmony (gpt-oss) reasoning effort")->check(CLI::IsMember({"low", "medium", "high"}));
  sub->add_flag("--show-reasoning", o.show_reasoning, "Harmony: print the analysis channel to stderr");
  add_steering_options(sub, o.steer, CaptureOptions::LastToken);
}

LoadedModel load_for_generation(const GenerationOptions& o, int64_t sequences) {
  LoadedModel m;
  m.backend = make_backend(o.model);
  LoadOptions lo = load_options(o.model, *m.backend, sequences);
  lo.run.n_ctx *= sequences;
  lo.run.batch = std::max(lo.run.batch, sequences);
  m.model = Model::load(resolve_model(o.model), *m.backend, lo);
  m.tokenizer = Tokenizer::from_gguf(m.model->gguf());
  if (!m.tokenizer)
    fail("'{}' has no vocabulary (tokenizer.ggml.model = none): it takes token ids, so use `turbospark logits`",
         m.model->gguf().path());
  const int64_t n_tok = m.tokenizer->n_vocab(), n_out = m.model->hp().n_vocab;
  if (n_tok > n_out)
    fail("the vocabulary has {} tokens but the model's embedding table only {}", n_tok, n_out);
  // Output rows past the tokenizer's last id (padding in some conversions) are tokens that cannot be
  // printed or recognised as end of generation: make_sampler() never draws them.
  if (n_tok < n_out)
    std::fprintf(stderr, "note: the model outputs %lld logits but the tokenizer has %lld tokens; ids %lld..%lld are never sampled\n",
                 static_cast<long long>(n_out), static_cast<long long>(n_tok), static_cast<long long>(n_tok),
                 static_cast<long long>(n_out - 1));
  m.steering = o.steer.load(*m.backend, m.model->hp().n_layer, m.model->hp().n_embd);
  return m;
}

Sampler make_sampler(const LoadedModel& m, const GenerationOptions& o) {
  return Sampler(sampler_config(o), m.tokenizer->n_vocab());
}

ForwardOptions LoadedModel::forward_options(const GenerationOptions& o) const {
  ForwardOptions f;
  f.max_batch = resolve_batch(o.model, *backend);
  f.steering = steering.get();
  return f;
}

SamplerConfig sampler_config(const GenerationOptions& o) {
  SamplerConfig c = o.sampler;
  if (o.seed) {
    c.seed = *o.seed;
  } else {
    c.seed = std::random_device{}();
    if (c.temperature > 0) std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(c.seed));
  }
  return c;
}

ChatSetup chat_setup(const LoadedModel& m, const GenerationOptions& o) {
  const std::string tmpl = m.model->gguf().get_string("tokenizer.chat_template", "");
  std::optional<chat::Format> f;
  if (!o.chat_template.empty()) {
    f = chat::parse_format_name(o.chat_template);
    if (!f) fail("unknown --chat-template '{}' (known: chatml, llama3, gemma, phi3, harmony)", o.chat_template);
  } else {
    if (tmpl.empty()) fail("the model has no chat template (tokenizer.chat_template); pass --chat-template NAME or run without --chat");
    f = chat::detect(tmpl);
    if (!f) fail("the model's chat template is not one TurboSpark renders; pass --chat-template NAME (chatml, llama3, gemma, phi3, harmony)");
  }
  const int32_t bos = m.tokenizer->bos();
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  return ChatSetup{*f, chat::context_for(tmpl, bos >= 0 ? m.tokenizer->token_bytes(bos) : "", date)};
}

}  // namespace ts::cli
