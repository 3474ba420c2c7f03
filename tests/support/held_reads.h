// A reader for ReaderPool (its ReadFn) whose reads wait until the test releases them, so a test can
// act while a read is known to be in flight. Records the offset of every read begun.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "residency/reader_pool.h"

namespace ts::test {

class HeldReads {
 public:
  ReaderPool::ReadFn fn();  // valid while this object lives
  void wait_entered(int n);  // until n reads have begun
  void release();            // every read, now and later, goes ahead
  std::vector<uint64_t> offsets();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int entered_ = 0;
  std::vector<uint64_t> offsets_;
};

}  // namespace ts::test
