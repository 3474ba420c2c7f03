#include "residency/reader_pool.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ts {

struct ReaderPool::Job {
  std::atomic<int64_t> remaining{0};  // chunks queued or being read
  std::mutex mu;                      // guards error and finished
  std::string error;
  bool finished = false;  // the last chunk is done and `done` runs with `error`
  Done done;
};

ReaderPool::ReaderPool(int threads, uint64_t chunk_bytes, ReadFn read) : chunk_(chunk_bytes), read_(std::move(read)) {
  if (threads < 1) fail("the expert reader pool needs at least one thread (got {})", threads);
  // O_DIRECT needs page-sized pieces; chunk boundaries inherit the extents' alignment.
  if (chunk_ < 4096 || chunk_ % 4096) fail("the expert read chunk must be a multiple of 4 KiB (got {} bytes)", chunk_);
  if (!read_) read_ = [](int fd, void* buf, size_t n, uint64_t off) { return ::pread(fd, buf, n, static_cast<off_t>(off)); };
  workers_.reserve(threads);
  try {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { worker(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (auto& t : workers_) t.join();
    fail("cannot start {} expert reader threads", threads);
  }
}

ReaderPool::~ReaderPool() {
  wait_idle();
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  work_.notify_all();
  for (auto& t : workers_) t.join();
}

ReaderPool::JobRef ReaderPool::submit(const std::vector<ReadExtent>& extents, Done done, Priority priority) {
  auto job = std::make_shared<Job>();
  job->done = std::move(done);
  std::vector<Chunk> chunks;
  for (const ReadExtent& e : extents)
    for (uint64_t at = 0; at < e.bytes; at += chunk_) {
      Chunk c{job, e};
      c.ext.offset = e.offset + at;
      c.ext.bytes = std::min(chunk_, e.bytes - at);
      c.ext.need = e.need > at ? std::min(c.ext.bytes, e.need - at) : 0;
      c.ext.dst = e.dst + at;
      chunks.push_back(std::move(c));
    }
  if (chunks.empty()) {
    job->done("");
    return nullptr;
  }
  job->remaining = static_cast<int64_t>(chunks.size());
  {
    std::lock_guard<std::mutex> lk(mu_);
    std::deque<Chunk>& q = priority == Priority::Demand ? demand_ : prefetch_;
    for (Chunk& c : chunks) q.push_back(std::move(c));
  }
  work_.notify_all();
  return job;
}

// Holding mu_, no worker takes a chunk: while some of the job's chunks are queued, `remaining` stays
// above the chunks being read, so only the subtraction below (Over) or the last chunk being read
// (Finishing, after `error` is set) can bring it to zero.
ReaderPool::Cancel ReaderPool::cancel(const JobRef& job, uint64_t& unread) {
  if (!job) return Cancel::TooLate;
  std::lock_guard<std::mutex> lk(mu_);
  {
    std::lock_guard<std::mutex> jl(job->mu);
    if (job->finished) return Cancel::TooLate;
    if (job->error.empty()) job->error = "cancelled";
  }
  int64_t dropped = 0;
  for (std::deque<Chunk>* q : {&demand_, &prefetch_})
    for (auto it = q->begin(); it != q->end();) {
      if (it->job != job) {
        ++it;
        continue;
      }
      unread += it->ext.bytes;
      ++dropped;
      it = q->erase(it);
    }
  if (dropped == 0 || job->remaining.fetch_sub(dropped) != dropped) return Cancel::Finishing;
  {
    std::lock_guard<std::mutex> jl(job->mu);
    job->finished = true;
  }
  if (demand_.empty() && prefetch_.empty() && busy_ == 0) idle_.notify_all();
  return Cancel::Over;
}

void ReaderPool::wait_idle() {
  std::unique_lock<std::mutex> lk(mu_);
  idle_.wait(lk, [&] { return demand_.empty() && prefetch_.empty() && busy_ == 0; });
}

void ReaderPool::worker() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    work_.wait(lk, [&] { return stop_ || !demand_.empty() || !prefetch_.empty(); });
    std::deque<Chunk>& q = !demand_.empty() ? demand_ : prefetch_;
    if (q.empty()) return;  // stop_ and nothing left
    Chunk c = std::move(q.front());
    q.pop_front();
    ++busy_;
    lk.unlock();
    read_chunk(c);
    if (--c.job->remaining == 0) {
      std::string error;
      {
        std::lock_guard<std::mutex> jl(c.job->mu);
        c.job->finished = true;
        error = c.job->error;
      }
      c.job->done(error);
    }
    c.job.reset();
    lk.lock();
    --busy_;
    if (demand_.empty() && prefetch_.empty() && busy_ == 0) idle_.notify_all();
  }
}

void ReaderPool::read_chunk(const Chunk& c) {
  {
    std::lock_guard<std::mutex> lk(c.job->mu);
    if (!c.job->error.empty()) return;  // the job failed already: its slot will be dropped
  }
  const ReadExtent& e = c.ext;
  uint64_t got = 0;
  std::string err;
  // Until `need` bytes are in: an O_DIRECT extent may ask past the end of the file, where the read
  // comes back short (and a second read at the unaligned end would be refused).
  while (got < e.need) {
    const ssize_t n = read_(e.fd, e.dst + got, e.bytes - got, e.offset + got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = fmt::format("cannot read '{}' at offset {}: {}", *e.path, e.offset + got, std::strerror(errno));
      break;
    }
    if (n == 0) break;  // end of file
    got += static_cast<uint64_t>(n);
  }
  if (err.empty() && got < e.need)
    err = fmt::format("short read of '{}': {} of {} bytes at offset {} (the file ends early: truncated?)", *e.path, got,
                      e.need, e.offset);
  if (!err.empty()) {
    std::lock_guard<std::mutex> lk(c.job->mu);
    if (c.job->error.empty()) c.job->error = err;
  }
}

}  // namespace ts
