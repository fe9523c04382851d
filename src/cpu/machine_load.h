// Whether other work shares the machine while kora measures: the number of runnable
// tasks the kernel reports (/proc/stat procs_running) in, a count out. With as many
// OpenMP threads as cores, one more runnable process stalls every barrier, and measured
// kernel times are then inflated many times over. kora profile looks before each kernel
// it measures and warns when more than a fifth of the looks saw other work
// (src/cpu/profile.cc, warn_if_busy).
#pragma once

namespace kora {

// Tasks runnable right now, the caller's included; -1 where /proc/stat is unreadable.
int runnable_tasks();

}  // namespace kora
