// The process-wide interrupt request (base/interrupt.h): one atomic flag.
#include "base/interrupt.h"

#include <atomic>

#include "kora/error.h"

namespace kora {
namespace {
std::atomic<bool> requested{false};
}  // namespace

void request_interrupt() { requested.store(true); }
void clear_interrupt() { requested.store(false); }
bool interrupt_requested() { return requested.load(std::memory_order_relaxed); }

void throw_if_interrupted(const std::string& what) {
  if (interrupt_requested()) throw Error("interrupted while " + what);
}

}  // namespace kora
