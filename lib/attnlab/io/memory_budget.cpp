// The memory this process may still use (memory_budget.hpp).
#include "attnlab/io/memory_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <limits>
#include <sys/resource.h>

namespace attnlab {

namespace {

// The value of "<key> N kB" in a /proc file, in bytes; -1 when absent.
double proc_kib_field(const char* file, const char* format) {
  double bytes = -1;
  if (std::FILE* f = std::fopen(file, "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (unsigned long long kb = 0; std::sscanf(line, format, &kb) == 1) bytes = 1024.0 * static_cast<double>(kb);
    std::fclose(f);
  }
  return bytes;
}

}  // namespace

double available_memory() {
  double avail = std::numeric_limits<double>::infinity();
  if (const double mem = proc_kib_field("/proc/meminfo", "MemAvailable: %llu kB"); mem >= 0) avail = mem;
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const double mapped = std::max(0.0, proc_kib_field("/proc/self/status", "VmSize: %llu kB"));
    avail = std::min(avail, static_cast<double>(lim.rlim_cur) - mapped);
  }
  return avail;
}

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

}  // namespace attnlab
