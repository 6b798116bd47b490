// The memory this process may still use, checked before anything large is allocated.
#pragma once

#include <string>

namespace attnlab {

// Bytes this process may still allocate: the smaller of the system's MemAvailable and the
// address-space limit (prlimit --as, ulimit -v) less what is mapped already. Infinity when neither
// can be read.
double available_memory();

// "1.50 GiB": a byte count for a one-line message.
std::string gib_text(double bytes);

}  // namespace attnlab
