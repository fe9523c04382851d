// Host evaluation of the operators that exporters use for shape arithmetic, so the
// shapes they compute become constants before any later stage looks at them.
#pragma once

#include <optional>
#include <vector>

#include "frontend/op_rules.h"

namespace kora {

// Operators whose value depends only on input shapes (Shape, Size): folded even when
// their input is computed.
bool folds_from_shapes(const std::string& op_type);

// Evaluates the node on its constant inputs. `outputs` are the inferred output types.
// nullopt when kora has no host evaluator for the operator.
std::optional<std::vector<Tensor>> fold_node(const InferContext& c,
                                             const std::vector<ValueInfo>& outputs);

}  // namespace kora
