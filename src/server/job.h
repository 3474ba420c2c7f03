// One generation request as the scheduler sees it, and its channel back to the HTTP thread that
// submitted it. The HTTP thread fills in the inputs, submits the job, then waits for tokens; the
// engine thread pushes each sampled token and finally the result. Either side may end it early:
// the client by cancel() (it went away, or a stop string was found in the formatted text), the
// engine by finishing the sequence.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/sequence.h"

namespace ts::server {

struct JobResult {
  Finish finish = Finish::None;
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  int32_t last_token = -1;          // the last sampled token (the end-of-generation id for EndOfText)
  std::string tail;                 // text held back until the end (see TextStream::flush)
  std::string error;                // non-empty: the engine failed on this request (not the client's fault)
  double first_token_seconds = 0;   // from submit until the first sampled token
};

class Job {
 public:
  // Inputs, set before submit and read-only afterwards.
  std::vector<int32_t> prompt;
  SamplerConfig sampler;
  SequenceParams params;

  // Client side. Waits at most `timeout` for news, then moves new tokens into `tokens` and returns
  // the result once the job is finished (tokens pushed before the result are always delivered first).
  std::optional<JobResult> wait(std::vector<SampledToken>& tokens, std::chrono::milliseconds timeout);
  // Asks the engine to end the job; it does so before its next forward call.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }

  // Engine side.
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  void push(SampledToken t);
  void finish(JobResult r);
  std::chrono::steady_clock::time_point submitted;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SampledToken> tokens_;
  std::optional<JobResult> result_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace ts::server
