// The memory this process may still use (memory_budget.hpp).
#include "attnlab/io/memory_budget.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <limits>
#include <pthread.h>
#include <string_view>
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

// libgomp's reading of OMP_STACKSIZE: a size with an optional unit B, K, M or G (K when none); -1 when
// unset or not a size (libgomp then ignores it too).
double omp_stacksize() {
  for (const char* name : {"OMP_STACKSIZE", "GOMP_STACKSIZE"}) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    std::string_view s(text);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    std::size_t digits = 0;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
    if (digits == 0 || digits > 15) continue;
    double value = std::strtod(std::string(s.substr(0, digits)).c_str(), nullptr);
    const std::string_view unit = s.substr(digits);
    if (unit.empty() || unit == "k" || unit == "K") value *= 1024.0;
    else if (unit == "m" || unit == "M") value *= 1024.0 * 1024.0;
    else if (unit == "g" || unit == "G") value *= 1024.0 * 1024.0 * 1024.0;
    else if (unit != "b" && unit != "B") continue;
    return value;
  }
  return -1;
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

double thread_stack_bytes() {
  if (const double omp = omp_stacksize(); omp > 0) return omp;
  pthread_attr_t attr;
  std::size_t size = 0;
  if (::pthread_getattr_default_np(&attr) == 0) {
    ::pthread_attr_getstacksize(&attr, &size);
    ::pthread_attr_destroy(&attr);
  }
  return size > 0 ? static_cast<double>(size) : 2.0 * 1024 * 1024;
}

std::string thread_memory_problem(int threads) {
  // The calling thread has its stack already; every other worker reserves one more.
  const double need = static_cast<double>(std::max(threads - 1, 0)) * thread_stack_bytes();
  if (need <= 0) return {};  // one thread: nothing to reserve (and /proc need not be read, which costs tens of us)
  const double avail = available_memory();
  if (need <= avail) return {};
  return fmt::format("{} threads need {} of address space for their stacks ({:.0f} MiB each), {} available; give "
                     "fewer --threads", threads, gib_text(need), thread_stack_bytes() / (1024.0 * 1024.0),
                     gib_text(std::max(avail, 0.0)));
}

}  // namespace attnlab
