// A fixed pool of worker threads, created once. parallel_for hands out task indices; callers write
// disjoint outputs per task, so results never depend on which thread ran which task (determinism
// across thread counts is a feature, not an accident).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ts {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  // Runs fn(task) for task in [0, n_tasks), on the caller and the workers; returns when all are done.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop();
  void run_tasks();

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// Splits [0, n) into `parts` nearly equal ranges; returns range `i` as [begin, end).
inline std::pair<int64_t, int64_t> split_range(int64_t n, int64_t parts, int64_t i) {
  const int64_t base = n / parts, rem = n % parts;
  const int64_t begin = i * base + (i < rem ? i : rem);
  return {begin, begin + base + (i < rem ? 1 : 0)};
}

}  // namespace ts
