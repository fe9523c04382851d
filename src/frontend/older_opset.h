// Models of opsets older than the ones kora implements (kMinOpset): in an operator that
// ONNX has not changed between the model's opset and kMinOpset, and which kora therefore
// reads as the kMinOpset definition; out: nothing, or one error naming the node.
#pragma once

#include <cstdint>

#include "kora/graph.h"

namespace kora {

// Throws kora::Error when `node`'s operator as defined at `opset` (< kMinOpset) is not the
// definition in force at kMinOpset (ONNX's own operator schema registry decides).
void check_unchanged_since(const Node& node, int64_t opset);

}  // namespace kora
