// The memory this process may still use, checked before anything large is allocated: the inputs a
// reader is about to hold, a model's shapes, the stacks of worker threads.
#pragma once

#include <string>

namespace attnlab {

// Bytes this process may still allocate: the smaller of the system's MemAvailable and the
// address-space limit (prlimit --as, ulimit -v) less what is mapped already. Infinity when neither
// can be read.
double available_memory();

// "1.50 GiB": a byte count for a one-line message.
std::string gib_text(double bytes);

// The address space each new worker thread reserves for its stack: OMP_STACKSIZE (or GOMP_STACKSIZE)
// when set, as the OpenMP runtime reads it, else the C library's default for new threads (the soft
// RLIMIT_STACK at start-up, 2 MiB when that is unlimited).
double thread_stack_bytes();

// "" when `threads` worker threads' stacks fit in available_memory(); else one line saying what
// they need and what is available (the OpenMP runtime would otherwise stop the process with its own
// message when it cannot create them).
std::string thread_memory_problem(int threads);

}  // namespace attnlab
