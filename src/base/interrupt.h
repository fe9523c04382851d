// Cooperative interruption of long work. In: a request from whoever drives kora (the
// Python package on Ctrl-C, from another thread). Out: kora::Error("interrupted ...")
// thrown at the next safe point of a long loop: between compiled translation units and
// measured kernels when profiling (what was measured is stored first), between
// orchestrated segments, between the stages of a compile and the plans of its check on the
// clock. The request is process-wide; the requester clears it once the work has stopped.
#pragma once

#include <string>

namespace kora {

void request_interrupt();
void clear_interrupt();
bool interrupt_requested();
// Throws kora::Error("interrupted while WHAT") when an interrupt was requested.
void throw_if_interrupted(const std::string& what);

}  // namespace kora
