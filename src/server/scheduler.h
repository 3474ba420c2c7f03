// Continuous batching. One engine thread owns the Forward (and so the backend); HTTP threads submit
// jobs to a bounded queue. Each step is ONE forward call over every running sequence's next token
// plus chunks of prompts being prefilled, so every weight is read once per step however many
// requests share it, and a new prompt is prefilled in chunks between decode steps so that running
// streams keep flowing. Up to `parallel` sequences run at once, each with its own sampler and seed;
// since a sequence's logits are the same bytes alone or batched, a request generates the same
// tokens whatever else runs with it (on a backend whose rows' bytes depend on their step, because
// plan_step keeps decode rows and prompt chunks in steps of their own there).
//
// Slots: a finished sequence stays in its slot with its KV cache, so that a later request sharing a
// prefix with it (a conversation's next turn) only prefills the rest; a cancelled one is freed at
// once. When no idle slot holds a useful prefix, the least recently used one is reused.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/forward.h"
#include "server/job.h"
#include "tokenizer/tokenizer.h"

namespace ts::server {

struct SchedulerOptions {
  int parallel = 4;           // sequences generating at once
  int64_t n_ctx = 4096;       // positions per sequence
  ForwardOptions forward;     // as `run` uses them; forward.max_batch = rows of all sequences per step
  int64_t prefill_chunk = 256;  // prompt rows per step while other sequences decode (always, where rows depend on their step)
  int64_t max_queue = 64;     // jobs waiting for a slot; submit() refuses more
};

// Counters for /metrics, updated by the engine thread and read by anyone.
struct SchedulerStats {
  std::atomic<int64_t> queued{0}, active{0}, idle_cached{0};
  std::atomic<int64_t> prompt_tokens{0}, cached_tokens{0}, generated_tokens{0};
  std::atomic<int64_t> steps{0}, cancelled{0};
  std::atomic<int64_t> kv_bytes{0}, kv_positions{0};  // held by all KV caches; filled positions
  std::atomic<double> busy_seconds{0};                // time spent in forward calls and sampling
};

// The rows each running sequence brings to the next step, in admission order: left[i] is 0 for a
// decoding sequence, else the prompt rows it has still to prefill. Every decoding sequence brings its
// next token and prompts fill the rest of max_batch: all of it when nothing decodes (time to first
// token), at most prefill_chunk rows while streams run. On a backend whose rows' bytes depend on
// their step (Backend::rows_independent false), decode rows and prompt chunks never share a step and
// one prompt is prefilled at a time, prefill_chunk rows per step, whatever runs beside it, so each
// sequence gets the bytes an idle server gives it; decode steps and prefill steps then take turns
// (prefill_turn: whose turn it is when both wait).
std::vector<int64_t> plan_step(const std::vector<int64_t>& left, int64_t max_batch, int64_t prefill_chunk, bool rows_independent,
                               bool prefill_turn);

class Scheduler {
 public:
  Scheduler(const Model& m, Backend& be, const Tokenizer& tok, const SchedulerOptions& opt);
  ~Scheduler();  // stops the engine thread; jobs still queued or running are finished as cancelled
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job. False when the queue is full (the caller answers "too busy"). The prompt must be
  // non-empty and shorter than the context (the caller validates).
  bool submit(std::shared_ptr<Job> job);
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerOptions& options() const { return opt_; }

 private:
  struct Slot {
    std::unique_ptr<Sequence> seq;  // null: no KV cache allocated
    std::shared_ptr<Job> job;       // null: idle
    std::unique_ptr<Sampler> sampler;
    uint64_t last_used = 0;
    double first_token_seconds = 0;
  };
  void loop();
  void admit();  // called with mu_ held
  Slot& pick_slot(const Job& job);
  void step();
  void end(Slot& s, Finish f, const std::string& error = {});
  void publish_kv();

  const Model& m_;
  Backend& be_;
  const Tokenizer& tok_;
  SchedulerOptions opt_;
  Forward fwd_;
  std::vector<Slot> slots_;
  std::vector<Slot*> order_;  // running slots in admission order (prefill is first come, first served)
  uint64_t clock_ = 0;
  bool prefill_turn_ = false;  // plan_step's turn, on a backend whose rows depend on their step
  SchedulerStats stats_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ts::server
