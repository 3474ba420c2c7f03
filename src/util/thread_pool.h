// A fixed pool of worker threads, created once. parallel_for hands out task indices; callers write
// disjoint outputs per task, so results never depend on which thread ran which task (determinism
// across thread counts is a feature, not an accident).
//
// Dispatch is the hot path of decoding (hundreds of small ops per token), so it allocates nothing:
// the job is a function pointer plus a pointer to the caller's callable, published through one
// atomic generation counter. Idle workers spin briefly on that counter, then sleep on a futex; the
// caller wakes sleepers only when there are any.
#pragma once
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace ts {

class ThreadPool {
 public:
  // Starts n_threads - 1 workers (the caller is the n-th). If the system refuses a thread part-way
  // (a process or memory limit), the workers already started are stopped and joined, and a ts::Error
  // says how many could be started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(task) for task in [0, n_tasks), on the caller and the workers; returns when all are done.
  // If a task throws, the tasks not yet started are skipped, every worker leaves the job, and the
  // first exception is rethrown here. A call from inside a task of this pool runs serially.
  template <class Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(n_tasks, [](void* f, int64_t t) { (*static_cast<F*>(f))(t); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }

 private:
  using TaskFn = void (*)(void*, int64_t);
  void run(int64_t n_tasks, TaskFn fn, void* ctx);
  void worker_loop();
  void run_tasks();
  void stop_workers();

  int n_threads_;
  std::vector<std::thread> workers_;
  // The current job. Written by the caller before it bumps generation_ (release), read by workers
  // after they see the new generation (acquire).
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_tasks_ = 0;
  bool stop_ = false;
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};          // workers blocked (or about to block) on generation_
  alignas(64) std::atomic<int64_t> next_{0};  // the next task index to hand out
  alignas(64) std::atomic<uint32_t> pending_{0};  // workers that have not left the current job
  std::atomic<bool> caller_sleeps_{false};
  std::mutex error_mu_;
  std::exception_ptr error_;  // the first exception thrown by a task of the current job
};

// Splits [0, n) into `parts` nearly equal ranges; returns range `i` as [begin, end).
inline std::pair<int64_t, int64_t> split_range(int64_t n, int64_t parts, int64_t i) {
  const int64_t base = n / parts, rem = n % parts;
  const int64_t begin = i * base + (i < rem ? i : rem);
  return {begin, begin + base + (i < rem ? 1 : 0)};
}

}  // namespace ts
