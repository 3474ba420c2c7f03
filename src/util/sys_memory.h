// What memory this process may use: MemAvailable from /proc/meminfo and the memory limit of the
// process's cgroup (v1 or v2, the tightest limit on the path to the root). Load-time checks and the
// `auto` expert residency size themselves from this, so a run refuses up front (with sizes) instead
// of being killed part-way.
#pragma once
#include <cstdint>
#include <string>

namespace ts {

struct MemoryLimits {
  uint64_t mem_total = 0;      // /proc/meminfo MemTotal
  uint64_t mem_available = 0;  // /proc/meminfo MemAvailable
  uint64_t cgroup_limit = 0;   // 0: no cgroup limit found
  uint64_t cgroup_usage = 0;   // the cgroup's current charge (page cache included)
  uint64_t address_space_limit = 0;  // RLIMIT_AS soft limit (`ulimit -v`); 0: none
  // The most memory the process may hold: MemAvailable plus what it already holds, capped by the
  // cgroup limit.
  uint64_t budget(uint64_t already_held) const;
};

MemoryLimits read_memory_limits();
uint64_t current_rss_bytes();  // VmRSS of this process
uint64_t peak_rss_bytes();     // VmHWM of this process
uint64_t current_vm_bytes();   // VmSize of this process: what RLIMIT_AS counts
std::string format_bytes(uint64_t bytes);  // "1.50 GiB", "312.0 MiB", "4.0 KiB"

}  // namespace ts
