// The reader pool on a real file: extents are split into chunks and land where asked; a short read
// and a failed read are reported once per job, naming the file and offset; demand reads overtake
// queued prefetch reads; a cancelled job reads nothing more than what was in flight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "cli/cli_harness.h"
#include "residency/reader_pool.h"
#include "support/held_reads.h"

namespace ts {
namespace {

using ::testing::HasSubstr;

class ReaderPoolTest : public testing::Test {
 protected:
  void SetUp() override {
    data_.resize(1 << 20);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>(i * 7 + (i >> 12));
    test::write_text(path_, data_);
    fd_ = ::open(path_.c_str(), O_RDONLY);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override { ::close(fd_); }
  // Runs one job to completion and returns its error ("" on success).
  std::string read(ReaderPool& pool, uint64_t off, uint64_t bytes, uint64_t need, char* dst) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string error;
    pool.submit({ReadExtent{fd_, &path_, off, bytes, need, reinterpret_cast<uint8_t*>(dst)}}, [&](const std::string& e) {
      std::lock_guard<std::mutex> lk(mu);
      error = e;
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done; });
    return error;
  }
  test::ScratchDir dir_;
  std::string path_ = dir_.file("data.bin"), data_;
  int fd_ = -1;
};

TEST_F(ReaderPoolTest, ChunksLandWhereAsked) {
  ReaderPool pool(3, 8192);
  std::vector<char> buf(300000, 0);
  EXPECT_EQ(read(pool, 12345, buf.size(), buf.size(), buf.data()), "");
  EXPECT_EQ(0, std::memcmp(buf.data(), data_.data() + 12345, buf.size()));
}

TEST_F(ReaderPoolTest, AShortReadNamesTheFileAndTheBytes) {
  ReaderPool pool(2, 4096);
  std::vector<char> buf(20000);
  const std::string e = read(pool, data_.size() - 10000, buf.size(), buf.size(), buf.data());
  EXPECT_THAT(e, HasSubstr("short read of '" + path_ + "'"));
  EXPECT_THAT(e, HasSubstr("truncated"));
  // Asking past the end is fine when the bytes that matter (`need`) are there (O_DIRECT tails).
  EXPECT_EQ(read(pool, data_.size() - 10000, buf.size(), 10000, buf.data()), "");
}

TEST_F(ReaderPoolTest, AFailedReadNamesTheFileAndTheError) {
  ReaderPool pool(2, 4096, [](int, void*, size_t, uint64_t off) -> ssize_t {
    if (off >= 8192) {
      errno = EIO;
      return -1;
    }
    return 4096;
  });
  std::vector<char> buf(65536);
  const std::string e = read(pool, 0, buf.size(), buf.size(), buf.data());
  EXPECT_THAT(e, HasSubstr("cannot read '" + path_ + "'"));
  EXPECT_THAT(e, HasSubstr(std::strerror(EIO)));
}

TEST_F(ReaderPoolTest, DemandReadsOvertakeQueuedPrefetches) {
  // One thread, held on the first chunk until both jobs are queued; then the order of offsets read
  // shows the demand job's chunks went first.
  test::HeldReads held;
  ReaderPool pool(1, 4096, held.fn());
  std::vector<char> a(16384), d(8192), blocker(4096);
  auto ignore = [](const std::string&) {};
  pool.submit({ReadExtent{fd_, &path_, 0, 4096, 4096, reinterpret_cast<uint8_t*>(blocker.data())}}, ignore);
  held.wait_entered(1);
  pool.submit({ReadExtent{fd_, &path_, 100 * 4096, a.size(), a.size(), reinterpret_cast<uint8_t*>(a.data())}}, ignore,
              ReaderPool::Priority::Prefetch);
  pool.submit({ReadExtent{fd_, &path_, 200 * 4096, d.size(), d.size(), reinterpret_cast<uint8_t*>(d.data())}}, ignore,
              ReaderPool::Priority::Demand);
  held.release();
  pool.wait_idle();
  const std::vector<uint64_t> order = held.offsets();
  ASSERT_EQ(order.size(), 1u + 4u + 2u);
  EXPECT_EQ(order[0], 0u);
  EXPECT_EQ(order[1], 200u * 4096);
  EXPECT_EQ(order[2], 201u * 4096);
  EXPECT_EQ(order[3], 100u * 4096);
}

// Cancelling a job: its queued chunks are never read and their bytes are counted unread; with no
// chunk of it being read the job is over at once and `done` never runs; with one being read, that
// read finishes and `done` says "cancelled"; a finished job cannot be cancelled.
TEST_F(ReaderPoolTest, ACancelledJobReadsNothingMore) {
  test::HeldReads held;
  ReaderPool pool(1, 4096, held.fn());
  std::vector<char> blocker(4096), a(16384), b(16384);
  std::atomic<int> a_done{0}, b_done{0};
  std::string b_error = "not called";
  pool.submit({ReadExtent{fd_, &path_, 0, 4096, 4096, reinterpret_cast<uint8_t*>(blocker.data())}}, [](const std::string&) {});
  const ReaderPool::JobRef ja = pool.submit({ReadExtent{fd_, &path_, 100 * 4096, a.size(), a.size(), reinterpret_cast<uint8_t*>(a.data())}},
                                            [&](const std::string&) { ++a_done; }, ReaderPool::Priority::Prefetch);
  const ReaderPool::JobRef jb = pool.submit({ReadExtent{fd_, &path_, 200 * 4096, b.size(), b.size(), reinterpret_cast<uint8_t*>(b.data())}},
                                            [&](const std::string& e) {
                                              b_error = e;
                                              ++b_done;
                                            },
                                            ReaderPool::Priority::Prefetch);
  held.wait_entered(1);  // the one thread holds the blocker: a and b are all queued
  uint64_t unread = 0;
  EXPECT_EQ(pool.cancel(ja, unread), ReaderPool::Cancel::Over);
  EXPECT_EQ(unread, a.size());
  held.release();
  pool.wait_idle();
  EXPECT_EQ(a_done, 0) << "a job cancelled while queued never calls done";
  EXPECT_EQ(b_done, 1);
  EXPECT_EQ(b_error, "");
  for (uint64_t off : held.offsets()) EXPECT_FALSE(off >= 100 * 4096 && off < 104 * 4096) << "a cancelled chunk was read at " << off;
  unread = 0;
  EXPECT_EQ(pool.cancel(jb, unread), ReaderPool::Cancel::TooLate) << "b had finished";
  EXPECT_EQ(unread, 0u);
  EXPECT_EQ(pool.cancel(nullptr, unread), ReaderPool::Cancel::TooLate);
}

TEST_F(ReaderPoolTest, AJobCancelledWhileBeingReadEndsAsCancelled) {
  test::HeldReads held;
  ReaderPool pool(1, 4096, held.fn());
  std::vector<char> a(16384);
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  std::string error;
  const ReaderPool::JobRef ja = pool.submit({ReadExtent{fd_, &path_, 100 * 4096, a.size(), a.size(), reinterpret_cast<uint8_t*>(a.data())}},
                                            [&](const std::string& e) {
                                              std::lock_guard<std::mutex> lk(mu);
                                              error = e;
                                              ++calls;
                                              cv.notify_all();
                                            },
                                            ReaderPool::Priority::Prefetch);
  held.wait_entered(1);  // its first chunk is being read
  uint64_t unread = 0;
  EXPECT_EQ(pool.cancel(ja, unread), ReaderPool::Cancel::Finishing);
  EXPECT_EQ(unread, a.size() - 4096) << "three chunks dropped";
  held.release();
  pool.wait_idle();
  std::unique_lock<std::mutex> lk(mu);
  cv.wait(lk, [&] { return calls > 0; });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(error, "cancelled");
  EXPECT_EQ(held.offsets().size(), 1u) << "only the chunk in flight was read";
}

TEST(ReaderPool, BadSettingsAreErrors) {
  EXPECT_THROW(ReaderPool(0, 4096), std::exception);
  EXPECT_THROW(ReaderPool(1, 1000), std::exception);
}

}  // namespace
}  // namespace ts
