// Measured peak memory of this process: Linux's resident-set high-water mark, resettable.
#pragma once

#include <optional>

namespace attnlab {

// Resets the high-water mark to the current resident set (writes "5" to /proc/self/clear_refs,
// Linux >= 4.0). Returns false where that is not possible; then no peak can be measured.
bool reset_peak_rss();

// VmHWM of /proc/self/status in bytes: the largest resident set since start or the last reset.
// Empty when the file cannot be read. Resident pages only: a buffer counts once it is touched.
std::optional<double> peak_rss_bytes();

// VmRSS of /proc/self/status in bytes: the resident set now. Empty when it cannot be read.
std::optional<double> current_rss_bytes();

}  // namespace attnlab
