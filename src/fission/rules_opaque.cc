// Operators kept whole as opaque primitives: their results depend on data in ways no
// index map or scalar function expresses (selection, sorting, computed indices).
#include "fission/builder.h"

namespace kora {
namespace {

void keep_whole(FissionBuilder& b) { b.opaque(); }

}  // namespace

void add_opaque_fission(FissionTable& t) {
  for (const char* op : {"TopK", "NonMaxSuppression", "GatherElements", "ArgMax", "ArgMin"})
    t[op] = keep_whole;
}

}  // namespace kora
