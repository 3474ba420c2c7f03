#include "util/thread_pool.h"

#include <dirent.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <thread>

#include "util/error.h"

// Counts heap allocations in this test binary, so a test can show that dispatching a job allocates
// nothing (a std::function holding a large callable would).
namespace {
std::atomic<int64_t> g_allocations{0};
}
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace ts {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (int rep = 0; rep < 20; ++rep) pool.parallel_for(n, [&](int64_t t) { hits[t].fetch_add(1); });
      for (int64_t t = 0; t < n; ++t) ASSERT_EQ(hits[t].load(), 20) << threads << " threads, task " << t;
    }
  }
}

TEST(ThreadPool, DispatchAllocatesNothing) {
  ThreadPool pool(3);
  std::array<int64_t, 16> big{};  // captured by value: too large for std::function's inline buffer
  big[3] = 1;
  std::atomic<int64_t> sum{0};
  auto job = [big, &sum](int64_t t) { sum.fetch_add(big[3] + t * 0); };
  pool.parallel_for(64, job);  // warm-up (thread-local state, first wake)
  const int64_t before = g_allocations.load();
  for (int rep = 0; rep < 100; ++rep) pool.parallel_for(64, job);
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_EQ(sum.load(), 101 * 64);
}

TEST(ThreadPool, TaskExceptionReachesTheCallerAfterEveryWorkerLeft) {
  ThreadPool pool(4);
  for (int rep = 0; rep < 10; ++rep) {
    std::atomic<int> running{0}, ran{0};
    try {
      pool.parallel_for(1000, [&](int64_t t) {
        running.fetch_add(1);
        ran.fetch_add(1);
        if (t == 17) {
          running.fetch_sub(1);
          fail("bad activation in task {}", t);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        running.fetch_sub(1);
      });
      FAIL() << "no exception";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "bad activation in task 17");
    }
    EXPECT_EQ(running.load(), 0) << "a task was still running when parallel_for returned";
    EXPECT_LT(ran.load(), 1000) << "tasks after the failure should be skipped";
    // The pool stays usable.
    std::atomic<int> n{0};
    pool.parallel_for(100, [&](int64_t) { n.fetch_add(1); });
    EXPECT_EQ(n.load(), 100);
  }
}

TEST(ThreadPool, OnlyTheFirstOfManyExceptionsIsRethrown) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(100, [](int64_t) { throw std::runtime_error("every task fails"); }),
               std::runtime_error);
  EXPECT_THROW(pool.parallel_for(1, [](int64_t) { fail("single task"); }), Error);
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(2);
  std::atomic<int> n{0};
  pool.parallel_for(8, [&](int64_t) { pool.parallel_for(8, [&](int64_t) { n.fetch_add(1); }); });
  EXPECT_EQ(n.load(), 64);
}

TEST(ThreadPool, WakesAfterWorkersWentToSleep) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: workers sleep
    std::atomic<int> n{0};
    pool.parallel_for(300, [&](int64_t) { n.fetch_add(1); });
    EXPECT_EQ(n.load(), 300);
  }
}

// Threads the user `uid` runs now (the count RLIMIT_NPROC is checked against).
int64_t threads_of_user(uid_t uid) {
  int64_t n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    std::ifstream f(std::string("/proc/") + e->d_name + "/status");
    std::string key;
    int64_t real_uid = -1, threads = 0;
    while (f >> key) {
      if (key == "Uid:") f >> real_uid;
      else if (key == "Threads:") f >> threads;
    }
    if (real_uid == static_cast<int64_t>(uid)) n += threads;
  }
  if (d) closedir(d);
  return n;
}

// A real thread limit: RLIMIT_NPROC, which the kernel does not apply to root, so root first becomes
// `nobody`. The pool must start a few workers, fail on the next, join them and report a ts::Error
// (today's pool let std::system_error escape a half-built object: std::terminate).
void start_pool_under_thread_limit() {
  if (geteuid() == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
      std::fprintf(stderr, "cannot drop to nobody\n");
      std::exit(3);
    }
  }
  const rlim_t limit = static_cast<rlim_t>(threads_of_user(getuid()) + 3);
  const rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_NPROC, &rl) != 0) std::exit(4);
  try {
    ThreadPool pool(1000);
    std::fprintf(stderr, "1000 threads started under a limit of %ld\n", static_cast<long>(limit));
    std::exit(5);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(0);
  }
}

TEST(ThreadPool, ConstructionUnderAThreadLimitIsAClearError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(start_pool_under_thread_limit(), testing::ExitedWithCode(0),
              "cannot start 1000 threads: the system refused thread [0-9]+ .*use fewer threads");
}

}  // namespace
}  // namespace ts
