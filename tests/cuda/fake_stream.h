// Streams of the fake driver (tests/cuda/fake_driver.cc), shared with its cuBLAS, cuBLASLt
// and cuDNN: work enqueued on a stream runs at once, unless the stream is being captured,
// when it is recorded into the capture's graph instead (and runs when the graph is
// launched). Work on the legacy default stream while a capture is open is refused, as
// CUDA refuses it.
#pragma once

#include <functional>

namespace kora_fake {

enum class Enqueued { kRan, kRecorded, kRefused };

// Runs `op` now or records it into the capture open on `stream` (a CUstream).
Enqueued enqueue(void* stream, const std::function<void()>& op);

}  // namespace kora_fake
