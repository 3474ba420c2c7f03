// `turbospark serve`: the OpenAI-compatible HTTP server (server/api_server.h) with continuous batching
// (server/scheduler.h). Loads the model once; SIGINT / SIGTERM stop it cleanly.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/generation_options.h"
#include "cli/steering_options.h"
#include "residency/expert_store.h"
#include "server/api_server.h"
#include "util/error.h"

namespace ts::cli {
namespace {

struct ServeOptions {
  GenerationOptions gen;  // model, threads, context, batch (rows per step), chat template, steering
  server::SchedulerOptions sched;
  server::ApiOptions api;
  std::string alias;
  int64_t max_tokens = 0;  // 0: the context size
};

void serve(ServeOptions o) {
  // Signals go to the watcher thread only: every thread started from here on inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that went away is an error return, not a signal

  // Every slot may hold a full context at once: the load refuses up front what cannot fit, rather
  // than fail requests (or be killed) once enough slots are busy.
  LoadedModel m = load_for_generation(o.gen, o.sched.parallel);
  server::ServedModel served;
  served.tok = m.tokenizer.get();
  served.id = o.alias.empty() ? std::filesystem::path(m.model->gguf().path()).stem().string() : o.alias;
  served.n_ctx = o.gen.model.ctx;
  served.max_tokens = o.max_tokens > 0 ? o.max_tokens : o.gen.model.ctx;
  try {
    const ChatSetup cs = chat_setup(m, o.gen);
    served.chat_format = cs.format;
    served.chat_context = cs.context;
  } catch (const Error& e) {
    std::fprintf(stderr, "turbospark: note: /v1/chat/completions is off: %s\n", e.what());
  }
  o.sched.n_ctx = o.gen.model.ctx;
  o.sched.forward = m.forward_options(o.gen);
  server::Scheduler sched(*m.model, *m.backend, *m.tokenizer, o.sched);
  server::ApiServer api(served, sched, o.api);
  // Only a streamed store has a cache whose hit rate means something (resident and mapped experts
  // are all hits); its counters are read under the store's lock while the engine runs.
  if (m.model->hp().is_moe() && m.model->residency().mode == ResidencyMode::Streamed)
    api.metrics().expert_cache_hit_rate = [&store = m.model->experts()]() -> std::optional<double> {
      const ExpertStats s = store.stats();
      if (s.requests == 0) return std::nullopt;
      return static_cast<double>(s.hits) / static_cast<double>(s.requests);
    };
  const int port = api.bind();
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    api.stop();
  });
  std::fprintf(stderr, "turbospark: serving '%s' on http://%s:%d (%d parallel, %lld tokens of context each, %s chat format)\n",
               served.id.c_str(), o.api.host.c_str(), port, o.sched.parallel, static_cast<long long>(o.sched.n_ctx),
               served.chat_format ? std::string(chat::format_name(*served.chat_format)).c_str() : "no");
  api.run();
  pthread_kill(watcher.native_handle(), SIGTERM);  // stopped some other way: release the watcher
  watcher.join();
  std::fprintf(stderr, "turbospark: server stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  auto* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server with continuous batching and a web chat page");
  add_model_options(sub, o->gen.model, false);
  // Steering is per server: every request's forward passes (and so the reusable prefix caches) are
  // steered the same way.
  add_steering_options(sub, o->gen.steer, CaptureOptions::None);
  sub->add_option("--chat-template", o->gen.chat_template, "chat format when the model's template is not recognised: chatml, llama3, gemma, phi3, harmony");
  sub->add_option("--host", o->api.host, "address to listen on (default 127.0.0.1: this machine only)")->capture_default_str();
  sub->add_option("--port", o->api.port, "TCP port (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  sub->add_option("--api-key", o->api.api_key, "require 'Authorization: Bearer KEY' on the API");
  sub->add_option("--alias", o->alias, "the model name clients use (default: the file name without .gguf)");
  sub->add_option("--parallel", o->sched.parallel, "sequences generating at once")->check(CLI::Range(1, 256))->capture_default_str();
  sub->add_option("--prefill-chunk", o->sched.prefill_chunk, "prompt tokens per step while other sequences decode (every prompt step on CUDA)")->check(CLI::Range(int64_t{1}, int64_t{8192}))->capture_default_str();
  sub->add_option("--max-queue", o->sched.max_queue, "requests waiting for a slot before new ones get 503")->check(CLI::Range(int64_t{0}, int64_t{1} << 20))->capture_default_str();
  sub->add_option("--max-tokens", o->max_tokens, "the most tokens one request may generate (default: the context size)")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  sub->add_option("--max-body", o->api.max_body, "largest request body in bytes")->check(CLI::Range(size_t{1024}, size_t{1} << 30))->capture_default_str();
  sub->add_option("--max-connections", o->api.limits.max_connections, "open connections; more get 503")->check(CLI::Range(1, 4096))->capture_default_str();
  sub->add_option("--timeout", o->api.limits.request_timeout, "seconds for a request to arrive, and for each write to a slow client")->check(CLI::Range(0.1, 3600.0))->capture_default_str()
      ->each([o](const std::string& v) { o->api.limits.write_timeout = std::stod(v); });
  sub->add_flag("--quiet", [o](int64_t) { o->api.log_requests = false; }, "do not log one line per request");
  sub->callback([o] { serve(*o); });
}

}  // namespace ts::cli
