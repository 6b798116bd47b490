// Measured peak memory of this process: Linux's resident-set high-water mark, resettable.
#include "attnlab/peak_rss.hpp"

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

std::optional<double> peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    double kib = 0;
    if (in >> kib) return kib * 1024.0;
  }
  return std::nullopt;
}

}  // namespace attnlab
