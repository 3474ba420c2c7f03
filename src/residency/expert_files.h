// File descriptors of an expert source's files, opened for pread: buffered, or with O_DIRECT so
// that reads bypass the page cache (no second copy of the weights in memory, and a cgroup's memory
// is not spent on cache). Closed on destruction.
#pragma once
#include <string>
#include <vector>

namespace ts {

class ExpertFiles {
 public:
  ExpertFiles(const std::vector<std::string>& paths, bool direct);
  ~ExpertFiles();
  ExpertFiles(const ExpertFiles&) = delete;
  ExpertFiles& operator=(const ExpertFiles&) = delete;
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
};

}  // namespace ts
