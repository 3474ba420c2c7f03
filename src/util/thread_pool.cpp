#include "util/thread_pool.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "util/error.h"

namespace ts {
namespace {

// How long an idle thread polls before it sleeps. Ops of a decode step follow each other within
// microseconds, so a short spin avoids a futex round trip (several microseconds each way) per op;
// past this, the thread gives its core back. Kept short because the machine may be shared: on 2
// cores under a load average of 10-15, 50 us instead of 200 us ran gpt-oss mini 2-5x faster (pp128
// and tg32, interleaved A/B; 1 ms was 10x slower): the scheduler charges spinning against the
// threads' fair share, so they wait longer for a core when there is work. Yielding while spinning
// was worse still (the core goes to other processes).
constexpr auto kSpin = std::chrono::microseconds(50);

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>& word, int n) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr, 0);
}

inline void cpu_relax() { __builtin_ia32_pause(); }

// Spins until pred() holds or the spin budget is spent; returns pred().
template <class Pred>
bool spin_until(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() > until) return pred();
  }
}

thread_local const ThreadPool* t_inside = nullptr;  // the pool whose task this thread is running

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  if (n_threads < 1 || n_threads > 1024) fail("thread count must be between 1 and 1024, got {}", n_threads);
  workers_.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::exception& e) {  // std::system_error (EAGAIN) or std::bad_alloc
      const size_t started = workers_.size();
      stop_workers();
      fail("cannot start {} threads: the system refused thread {} ({}); use fewer threads (-t {} worked here)",
           n_threads, started + 2, e.what(), started + 1);
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_ = true;
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(generation_, INT32_MAX);
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run_tasks() {
  const ThreadPool* outer = t_inside;
  t_inside = this;
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_relaxed);
    if (t >= n_tasks_) break;
    try {
      fn_(ctx_, t);
    } catch (...) {
      std::lock_guard<std::mutex> lk(error_mu_);
      if (!error_) error_ = std::current_exception();
      next_.store(n_tasks_, std::memory_order_relaxed);  // skip what has not started
    }
  }
  t_inside = outer;
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed)) {
      // Dekker with the caller: we announce ourselves, then re-check; the caller bumps the
      // generation, then checks for sleepers (both seq_cst), so one of us sees the other.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    run_tasks();
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeps_.load(std::memory_order_seq_cst))
      futex_wake(pending_, 1);
  }
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1 || t_inside == this) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(ctx, t);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  n_tasks_ = n_tasks;
  error_ = nullptr;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<uint32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the job (release)
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake(generation_, INT32_MAX);
  run_tasks();
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    caller_sleeps_.store(true, std::memory_order_seq_cst);
    for (uint32_t p; (p = pending_.load(std::memory_order_seq_cst)) != 0;) futex_wait(pending_, p);
    caller_sleeps_.store(false, std::memory_order_relaxed);
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace ts
