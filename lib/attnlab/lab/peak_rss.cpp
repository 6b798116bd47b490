// Measured peak memory of this process: Linux's resident-set high-water mark, resettable.
#include "attnlab/lab/peak_rss.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace attnlab {

bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (!f) return false;
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

namespace {

// The value of a "Name:   123 kB" line of /proc/self/status, in bytes.
std::optional<double> status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream in(line.substr(key.size()));
    double kib = 0;
    if (in >> kib) return kib * 1024.0;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> peak_rss_bytes() { return status_bytes("VmHWM:"); }

std::optional<double> current_rss_bytes() { return status_bytes("VmRSS:"); }

}  // namespace attnlab
