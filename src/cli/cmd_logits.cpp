// `turbospark logits`: teacher-forces token ids and writes every position's logits as float32,
// row-major [n_tokens][n_vocab]. This is the contract the parity checks use: keep it stable.
#include <memory>

#include "cli/commands.h"
#include "cli/instruments.h"
#include "cli/options.h"
#include "cli/steering_options.h"
#include "model/forward.h"
#include "runtime/token_file.h"
#include "util/error.h"
#include "util/output_file.h"

namespace ts::cli {
namespace {

struct LogitsOptions {
  ModelOptions model;
  std::string tokens, out;
  bool sequential = false;
  std::string expert_order = "router";
  int64_t phases_from = 0;
  SteeringOptions steer;
};

void run_logits(const LogitsOptions& o) {
  check_output_path(o.out);  // a bad -o fails before the work, not after it
  const std::vector<int32_t> ids = read_token_file(o.tokens);
  const int64_t n = static_cast<int64_t>(ids.size());
  // --ctx is the context limit here as everywhere (README): more tokens than that is an error, not a
  // silently larger cache.
  if (n > o.model.ctx)
    fail("'{}' holds {} tokens but the context is {} (--ctx): raise --ctx to at least {}", o.tokens, n, o.model.ctx, n);
  auto be = make_backend(o.model);
  ForwardOptions fo;
  fo.max_batch = o.sequential ? 1 : std::min<int64_t>(resolve_batch(o.model, *be), n);
  // The cache needs only the n positions teacher-forced here (the logits do not depend on its size);
  // Model::load checks that the run fits in memory before it allocates (model/memory_estimate.h).
  LoadOptions lo = load_options(o.model, *be, n);
  lo.run.n_ctx = n;
  lo.run.batch = fo.max_batch;
  auto model = Model::load(resolve_model(o.model), *be, lo);
  const int64_t V = model->hp().n_vocab;
  KvCache kv(*be, model->hp(), n);
  fo.expert_order = o.expert_order == "descending" ? ExpertOrder::Descending
                    : o.expert_order == "ascending" ? ExpertOrder::Ascending
                                                    : ExpertOrder::Router;
  const std::unique_ptr<Steering> steering = o.steer.load(*be, model->hp().n_layer, model->hp().n_embd);
  fo.steering = steering.get();
  Forward fwd(*model, *be, fo);
  ResidualCapture capture;
  const bool capturing = !o.steer.capture_path.empty();
  std::vector<float> logits(static_cast<size_t>(n) * V);
  RunInstruments instruments(o.model, *model);
  // Prefill goes through the batched path in chunks; --sequential feeds one token at a time
  // through the decode path. Both must agree (the parity tests check each against the reference).
  if (o.phases_from >= n) fail("--phases-from {} leaves none of the {} tokens to measure", o.phases_from, n);
  if (o.phases_from % fo.max_batch) fail("--phases-from {} is not on a batch boundary (batches of {}; use --sequential)", o.phases_from, fo.max_batch);
  for (int64_t i = 0; i < n; i += fo.max_batch) {
    if (o.phases_from > 0 && i == o.phases_from) instruments.restart();
    const int64_t m = std::min(fo.max_batch, n - i);
    // Without --capture-all only the last token of the whole input is captured.
    const bool cap = capturing && (o.steer.capture_all || i + m == n);
    const SeqStep s{&kv, ids.data() + i, m, true, logits.data() + i * V, cap ? &capture : nullptr, o.steer.capture_all};
    fwd.run(std::span<const SeqStep>(&s, 1));
  }
  instruments.report(n - o.phases_from);
  write_output_file(o.out, logits.data(), logits.size() * sizeof(float));
  if (capturing) capture.write(o.steer.capture_path);
}

}  // namespace

void add_logits_command(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  auto* sub = app.add_subcommand("logits", "teacher-force token ids and write all logits as float32 [n_tokens][n_vocab]");
  add_model_options(sub, o->model, true);
  sub->add_option("--tokens", o->tokens, "file of token ids, one per line")->required();
  sub->add_option("-o,--output", o->out, "output file (float32, row-major); '-' for stdout")->required();
  sub->add_flag("--sequential", o->sequential, "feed one token at a time through the decode path");
  sub->add_option("--phases-from", o->phases_from, "measure --phases from this token on (the ones before warm the expert cache); with --sequential")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  sub->add_option("--expert-order", o->expert_order, "order in which routed experts are asked for: router rank (default) or expert index (a testing aid: the output must not change)")
      ->check(CLI::IsMember({"router", "ascending", "descending"}));
  add_steering_options(sub, o->steer, CaptureOptions::EveryPosition);
  sub->callback([o] { run_logits(*o); });
}

}  // namespace ts::cli
