#include "util/sys_memory.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>

namespace ts {
namespace {

// "Key:   123 kB" lines of /proc/meminfo or /proc/self/status, in bytes; 0 when absent.
uint64_t kb_field(const char* file, std::string_view key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream is(line.substr(key.size() + 1));
      uint64_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

bool read_u64(const std::string& path, uint64_t& out) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s)) return false;
  if (s == "max") return false;  // v2: no limit at this level
  try {
    out = std::stoull(s);
  } catch (...) {
    return false;
  }
  return true;
}

// The cgroup path of this process for a v1 controller ("memory") or v2 ("" in the 0:: line).
std::string cgroup_path(bool v2) {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (v2 ? (line.compare(0, 2, "0:") == 0 && ctrls.empty()) : (ctrls.find("memory") != std::string::npos))
      return path;
  }
  return "";
}

// The tightest limit from `dir` up to `root`, reading `file` in each directory (v2: memory.max).
void walk_up(const std::string& root, std::string rel, const char* limit_file, MemoryLimits& m, const char* usage_file) {
  bool first = true;
  for (;;) {
    const std::string dir = root + rel;
    uint64_t v = 0;
    // v1 reports "no limit" as a huge page-aligned number.
    if (read_u64(dir + "/" + limit_file, v) && v < (uint64_t{1} << 60))
      m.cgroup_limit = m.cgroup_limit ? std::min(m.cgroup_limit, v) : v;
    if (first) {
      read_u64(dir + "/" + usage_file, m.cgroup_usage);
      first = false;
    }
    if (rel.empty() || rel == "/") break;
    rel = rel.substr(0, rel.find_last_of('/'));
  }
}

}  // namespace

uint64_t MemoryLimits::budget(uint64_t already_held) const {
  uint64_t b = mem_available + already_held;
  if (cgroup_limit) b = std::min(b, cgroup_limit);
  return b;
}

MemoryLimits read_memory_limits() {
  MemoryLimits m;
  m.mem_total = kb_field("/proc/meminfo", "MemTotal");
  m.mem_available = kb_field("/proc/meminfo", "MemAvailable");
  const std::string v1 = cgroup_path(false);
  if (!v1.empty()) walk_up("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes", m, "memory.usage_in_bytes");
  if (!m.cgroup_limit) {
    const std::string v2 = cgroup_path(true);
    if (!v2.empty()) walk_up("/sys/fs/cgroup", v2, "memory.max", m, "memory.current");
  }
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) m.address_space_limit = as.rlim_cur;
  return m;
}

uint64_t current_rss_bytes() { return kb_field("/proc/self/status", "VmRSS"); }
uint64_t peak_rss_bytes() { return kb_field("/proc/self/status", "VmHWM"); }
uint64_t current_vm_bytes() { return kb_field("/proc/self/status", "VmSize"); }

std::string format_bytes(uint64_t b) {
  const double v = static_cast<double>(b);
  if (b >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", v / (1 << 30));
  if (b >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", v / (1 << 20));
  return fmt::format("{:.1f} KiB", v / 1024);
}

}  // namespace ts
