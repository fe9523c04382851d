// Constant folding on the primitive graph.
#pragma once

#include "kora/primitive.h"

namespace kora {

// Evaluates (with the reference interpreter) every primitive whose inputs are all
// constants and whose result is no larger than its inputs (a tile of a constant stays an
// index map, and so does a broadcast, unless only such folded work reads it); the
// results become constants. Returns how many.
int fold_constant_primitives(PrimGraph& graph);

}  // namespace kora
