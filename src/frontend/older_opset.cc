// Older opsets, read through ONNX's operator schema registry: an operator whose latest
// definition at the model's opset is also the latest at kMinOpset means the same thing
// in both, so kora's rules for kMinOpset apply (And-7, Not-1, Relu-6 qualify; Upsample-9,
// Add-6 with its `broadcast` attribute do not).
#include "frontend/older_opset.h"

#include <onnx/defs/schema.h>

#include "kora/error.h"
#include "kora/frontend.h"

namespace kora {
namespace {

// Older versions of operators that kora's rules implement too: Upsample-9 (Upsample-10
// only deprecated it), Scan-9 (Scan-11 only added negative axes), Scan-8 (batched: the
// importer marks it, control_flow.cc unrolls it per batch element), Scatter-9
// (ScatterElements without a reduction, which kora runs it as).
bool also_implemented(const std::string& op_type, int version) {
  return ((op_type == "Upsample" || op_type == "Scan" || op_type == "Scatter") && version == 9) ||
         (op_type == "Scan" && version == 8);
}

}  // namespace

void check_unchanged_since(const Node& node, int64_t opset) {
  if (node.op_type == "Constant") return;  // its `value` attribute reads the same in all
  const auto* then = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(opset));
  const auto* now = onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(kMinOpset));
  if (!then)
    throw Error(node.describe() + ": operator '" + node.op_type + "' does not exist in opset " +
                std::to_string(opset));
  if (also_implemented(node.op_type, then->since_version())) return;
  if (!now || now->since_version() != then->since_version())
    throw Error(node.describe() + ": operator '" + node.op_type + "' of opset " +
                std::to_string(opset) + " (version " + std::to_string(then->since_version()) +
                ") changed before opset " + std::to_string(kMinOpset) +
                ", the oldest kora implements; export the model with opset " +
                std::to_string(kMinOpset) + " or later");
}

}  // namespace kora
