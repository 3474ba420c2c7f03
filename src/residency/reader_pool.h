// Reader threads that fill expert slots with pread. A job (one expert's extents) is split into
// chunks so that several threads keep several requests in flight on the device at once; the chunk
// size and thread count are measured (docs/RESIDENCY.md), not guessed. A job completes once: its
// callback runs on a reader thread with an empty string, or with the first error (a failed or short
// read names the file, offset and byte counts). Reads are never retried into a half-filled slot:
// the caller treats any error as "slot empty".
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace ts {

struct ReadExtent {
  int fd = -1;
  const std::string* path = nullptr;  // for messages; outlives the job
  uint64_t offset = 0;                // file offset
  uint64_t bytes = 0;                 // bytes to ask for (whole pages for O_DIRECT)
  uint64_t need = 0;                  // bytes that must arrive (<= bytes: O_DIRECT may ask past EOF)
  uint8_t* dst = nullptr;
};

class ReaderPool {
 public:
  // pread by default; tests inject a failing reader here.
  using ReadFn = std::function<ssize_t(int fd, void* buf, size_t n, uint64_t offset)>;
  using Done = std::function<void(const std::string& error)>;

  ReaderPool(int threads, uint64_t chunk_bytes, ReadFn read = {});
  ~ReaderPool();  // finishes every queued job first
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // Demand reads are what a computation waits for now; prefetch reads only guess at what it will
  // want: a worker takes every queued demand chunk before any prefetch chunk, so a wrong guess
  // never delays a needed read by more than the chunks already being read.
  enum class Priority { Demand, Prefetch };
  struct Job;
  using JobRef = std::shared_ptr<Job>;  // a submitted job, to cancel it; null for a job of no bytes
  // Queues the extents (FIFO among jobs of the same priority); `done` runs once when all chunks have
  // finished.
  JobRef submit(const std::vector<ReadExtent>& extents, Done done, Priority priority = Priority::Demand);
  // Stops a job (a prefetch its layer did not ask for): its chunks not yet begun are dropped and
  // their bytes added to `unread`, and the job fails with the error "cancelled".
  //  - Over: nothing of it is being read any more; `done` will not run.
  //  - Finishing: chunks being read finish first; the last one runs `done("cancelled")`.
  //  - TooLate: the job had finished; `done` runs (or ran) with its own result.
  enum class Cancel { Over, Finishing, TooLate };
  Cancel cancel(const JobRef& job, uint64_t& unread);
  void wait_idle();  // returns when no job is queued or running
  int threads() const { return static_cast<int>(workers_.size()); }
  uint64_t chunk_bytes() const { return chunk_; }

 private:
  struct Chunk {
    std::shared_ptr<Job> job;
    ReadExtent ext;  // a piece of one of the job's extents
  };
  void worker();
  void read_chunk(const Chunk& c);

  uint64_t chunk_;
  ReadFn read_;
  std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<Chunk> demand_, prefetch_;
  int64_t busy_ = 0;  // chunks being read
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ts
