#include "server/scheduler.h"

#include <algorithm>

#include "util/error.h"

namespace ts::server {
namespace {

using Clock = std::chrono::steady_clock;

JobResult cancelled_result() {
  JobResult r;
  r.finish = Finish::Cancelled;
  return r;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const ForwardOptions& forward_options(const SchedulerOptions& o) {
  if (o.parallel < 1) fail("--parallel must be at least 1, got {}", o.parallel);
  if (o.forward.max_batch < o.parallel)
    fail("--batch ({}) must be at least --parallel ({}): every running sequence decodes in each step", o.forward.max_batch, o.parallel);
  if (o.prefill_chunk < 1) fail("--prefill-chunk must be at least 1, got {}", o.prefill_chunk);
  if (o.n_ctx < 2) fail("--ctx must be at least 2, got {}", o.n_ctx);
  if (o.max_queue < 0) fail("--max-queue must be >= 0, got {}", o.max_queue);
  return o.forward;
}

}  // namespace

std::vector<int64_t> plan_step(const std::vector<int64_t>& left, int64_t max_batch, int64_t prefill_chunk, bool rows_independent,
                               bool prefill_turn) {
  std::vector<int64_t> rows(left.size(), 0);
  const bool decoding = std::ranges::count(left, 0) > 0, prefilling = std::ranges::count(left, 0) < static_cast<std::ptrdiff_t>(left.size());
  if (!rows_independent) {
    if (decoding && (!prefilling || !prefill_turn)) {
      for (size_t i = 0; i < left.size(); ++i) rows[i] = left[i] == 0 ? 1 : 0;
    } else if (prefilling) {
      const auto first = std::ranges::find_if(left, [](int64_t l) { return l > 0; }) - left.begin();
      rows[first] = std::min({left[first], prefill_chunk, max_batch});
    }
    return rows;
  }
  int64_t used = 0;
  for (size_t i = 0; i < left.size(); ++i)
    if (left[i] == 0) rows[i] = 1, ++used;
  int64_t budget = max_batch - used;
  if (used > 0) budget = std::min(budget, prefill_chunk);
  for (size_t i = 0; i < left.size() && budget > 0; ++i)
    if (left[i] > 0) budget -= rows[i] = std::min(left[i], budget);
  return rows;
}

Scheduler::Scheduler(const Model& m, Backend& be, const Tokenizer& tok, const SchedulerOptions& opt)
    : m_(m), be_(be), tok_(tok), opt_(opt), fwd_(m, be, forward_options(opt)), slots_(static_cast<size_t>(opt.parallel)) {
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || static_cast<int64_t>(queue_.size()) >= opt_.max_queue) return false;
    job->submitted = Clock::now();
    queue_.push_back(std::move(job));
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  cv_.notify_all();
  return true;
}

void Scheduler::loop() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || !order_.empty(); });
      if (stop_) break;
    }
    admit();
    if (!order_.empty()) step();
  }
  while (!order_.empty()) end(*order_.front(), Finish::Cancelled);
  std::lock_guard lock(mu_);
  for (auto& job : queue_) job->finish(cancelled_result());
  queue_.clear();
}

// Jobs whose client already left are dropped here; the others take free slots in arrival order.
void Scheduler::admit() {
  std::vector<std::shared_ptr<Job>> taken;
  {
    std::lock_guard lock(mu_);
    std::erase_if(queue_, [&](const std::shared_ptr<Job>& job) {
      if (!job->cancelled()) return false;
      job->finish(cancelled_result());
      ++stats_.cancelled;
      return true;
    });
    while (!queue_.empty() && taken.size() + order_.size() < slots_.size()) {
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    stats_.queued = static_cast<int64_t>(queue_.size());
  }
  for (auto& job : taken) {
    Slot& s = pick_slot(*job);
    try {
      s.sampler = std::make_unique<Sampler>(job->sampler, tok_.n_vocab());
      if (!s.seq) s.seq = std::make_unique<Sequence>(m_, be_, tok_, opt_.n_ctx);
      s.seq->start(job->prompt, *s.sampler, job->params);
    } catch (const std::exception& e) {
      JobResult r;
      r.error = e.what();
      job->finish(std::move(r));
      s.sampler.reset();
      s.seq.reset();
      continue;
    }
    s.job = std::move(job);
    stats_.prompt_tokens += s.seq->prompt_size() - s.seq->reused();
    stats_.cached_tokens += s.seq->reused();
    order_.push_back(&s);
  }
  publish_kv();
}

// The idle slot whose cache shares the longest prefix with the prompt; without one, a slot that holds
// no cache, else the least recently used.
Scheduler::Slot& Scheduler::pick_slot(const Job& job) {
  Slot* best = nullptr;
  int64_t best_reuse = 0;
  for (Slot& s : slots_)
    if (!s.job && s.seq)
      if (const int64_t r = s.seq->reusable(job.prompt); r > best_reuse) best = &s, best_reuse = r;
  if (best) return *best;
  for (Slot& s : slots_)
    if (!s.job && !s.seq) return s;
  for (Slot& s : slots_)
    if (!s.job && (!best || s.last_used < best->last_used)) best = &s;
  return *best;  // admit() only takes as many jobs as there are idle slots
}

void Scheduler::step() {
  for (size_t i = 0; i < order_.size();)
    if (order_[i]->job->cancelled()) end(*order_[i], Finish::Cancelled);
    else ++i;
  if (order_.empty()) return;
  const auto t0 = Clock::now();

  std::vector<int64_t> left;
  for (const Slot* s : order_) left.push_back(s->seq->prompt_left());
  const std::vector<int64_t> rows = plan_step(left, opt_.forward.max_batch, opt_.prefill_chunk, be_.rows_independent(), prefill_turn_);
  prefill_turn_ = !prefill_turn_;
  // Decode rows first, then prompt chunks (the order of plan_step's rows within each kind).
  std::vector<SeqStep> steps;
  std::vector<Slot*> in_step;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < order_.size(); ++i)
      if (rows[i] > 0 && (left[i] > 0) == (pass == 1)) {
        steps.push_back(order_[i]->seq->next_step(rows[i]));
        in_step.push_back(order_[i]);
      }

  try {
    fwd_.run(steps);
  } catch (const std::exception& e) {
    // Not the clients' fault (e.g. non-finite logits): these requests fail, the server goes on.
    for (Slot* s : in_step) end(*s, Finish::Cancelled, e.what());
    return;
  }
  ++stats_.steps;
  for (Slot* s : in_step) {
    std::optional<SampledToken> t;
    try {
      t = s->seq->advance();
    } catch (const std::exception& e) {
      end(*s, Finish::Cancelled, e.what());
      continue;
    }
    if (t) {
      ++stats_.generated_tokens;
      if (s->seq->generated() == 1) s->first_token_seconds = seconds_since(s->job->submitted);
      if (s->seq->finish() != Finish::EndOfText) s->job->push(std::move(*t));
    }
    if (s->seq->done()) end(*s, s->seq->finish());
  }
  stats_.busy_seconds = stats_.busy_seconds + seconds_since(t0);
  publish_kv();
}

void Scheduler::end(Slot& s, Finish f, const std::string& error) {
  Sequence& q = *s.seq;
  q.cancel();  // no-op when the sequence finished by itself
  JobResult r;
  r.finish = f;
  r.error = error;
  r.prompt_tokens = q.prompt_size();
  r.cached_tokens = q.reused();
  r.completion_tokens = q.generated();
  r.last_token = q.last_sampled();
  r.tail = error.empty() ? q.flush() : std::string();
  r.first_token_seconds = s.first_token_seconds;
  const std::shared_ptr<Job> job = std::move(s.job);
  s.sampler.reset();
  s.first_token_seconds = 0;
  s.last_used = ++clock_;
  // A cancelled or failed sequence's cache is freed at once; a finished one is kept for its prefix.
  if (f == Finish::Cancelled || !error.empty()) s.seq.reset();
  std::erase(order_, &s);
  publish_kv();
  // After publish_kv: whoever sees this cancellation counted also sees its sequence and cache gone.
  if (f == Finish::Cancelled) ++stats_.cancelled;
  job->finish(std::move(r));  // last: the client sees the counters that include this job's end
}

void Scheduler::publish_kv() {
  int64_t positions = 0, idle = 0;
  for (const Slot& s : slots_)
    if (s.seq) {
      positions += static_cast<int64_t>(s.seq->cached().size());
      idle += s.job ? 0 : 1;
    }
  stats_.kv_bytes = static_cast<int64_t>(be_.kv_bytes());
  stats_.kv_positions = positions;
  stats_.active = static_cast<int64_t>(order_.size());
  stats_.idle_cached = idle;
}

}  // namespace ts::server
