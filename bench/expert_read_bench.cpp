// Expert read throughput of the reader pool (residency/reader_pool.h) per thread count and chunk
// size: reads whole expert blobs of an install directory (or any large file, in blob-sized pieces)
// with O_DIRECT, each configuration on its own region of the file so that no configuration reads
// what another brought into a device cache. This is the measurement behind the pool's defaults
// (docs/RESIDENCY.md).
//   expert_read_bench FILE [BLOB_MB=13] [BLOBS_PER_RUN=24] [START_GB=0]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "residency/reader_pool.h"
#include "util/error.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [BLOB_MB=13] [BLOBS_PER_RUN=24] [START_GB=0]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const uint64_t blob = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 13) << 20;
  const int per_run = argc > 3 ? std::atoi(argv[3]) : 24;
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  struct stat st {};
  ::fstat(fd, &st);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* mem = nullptr;
  if (posix_memalign(&mem, 4096, blob * 4)) return 1;
  uint8_t* buf = static_cast<uint8_t*>(mem);

  const int threads[] = {1, 2, 4, 8};
  const uint64_t chunks[] = {256 << 10, 1 << 20, 4 << 20};
  uint64_t at = (argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0) << 30;
  std::printf("threads chunk_KiB GB/s\n");
  for (int t : threads)
    for (uint64_t c : chunks) {
      ts::ReaderPool pool(t, c);
      if (at + blob * static_cast<uint64_t>(per_run) > size) at = 0;
      const auto t0 = std::chrono::steady_clock::now();
      // Up to 4 blobs in flight, as a layer's top-4 misses are.
      for (int b = 0; b < per_run; ++b) {
        std::vector<ts::ReadExtent> ext{{fd, &path, at, blob, blob, buf + (b % 4) * blob}};
        pool.submit(ext, [](const std::string& err) {
          if (!err.empty()) std::fprintf(stderr, "%s\n", err.c_str());
        });
        at += blob;
        if (b % 4 == 3) pool.wait_idle();
      }
      pool.wait_idle();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%d %llu %.3f\n", t, static_cast<unsigned long long>(c >> 10),
                  static_cast<double>(blob) * per_run / s / 1e9);
      std::fflush(stdout);
    }
  std::free(mem);
  ::close(fd);
  return 0;
}
