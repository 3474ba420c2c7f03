#include "util/sys_memory.h"

#include <gtest/gtest.h>

#include <vector>

namespace ts {
namespace {

TEST(SysMemory, ReadsMeminfoAndRss) {
  const MemoryLimits m = read_memory_limits();
  EXPECT_GT(m.mem_total, uint64_t{1} << 20);
  EXPECT_GT(m.mem_available, 0u);
  EXPECT_LE(m.mem_available, m.mem_total);
  EXPECT_LE(m.budget(0), m.mem_available);
  if (m.cgroup_limit) {
    EXPECT_LE(m.budget(uint64_t{1} << 62), m.cgroup_limit);
  }
}

TEST(SysMemory, RssGrowsWithTouchedMemory) {
  const uint64_t before = current_rss_bytes();
  std::vector<char> block(64 << 20, 1);
  const uint64_t after = current_rss_bytes();
  EXPECT_GE(after, before + (48u << 20));
  EXPECT_GE(peak_rss_bytes(), after);
  EXPECT_EQ(block[12345], 1);
}

TEST(SysMemory, FormatsBytes) {
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3u << 20), "3.0 MiB");
  EXPECT_EQ(format_bytes(uint64_t{3} << 29), "1.50 GiB");
}

}  // namespace
}  // namespace ts
