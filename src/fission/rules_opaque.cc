// Operators kept whole as opaque primitives: their results depend on data in ways no
// index map or scalar function expresses (selection, sorting, computed indices: TopK,
// NonMaxSuppression, ArgMax/ArgMin, GatherElements, GatherND, ScatterND, ScatterElements). Two
// more are kept whole where their rules find them so: Gather with computed indices
// (rules_layout.cc) and MaxPool with its Indices output (rules_reduce.cc).
#include "fission/builder.h"

namespace kora {
namespace {

void keep_whole(FissionBuilder& b) { b.opaque(); }

}  // namespace

void add_opaque_fission(FissionTable& t) {
  for (const char* op : {"TopK", "NonMaxSuppression", "GatherElements", "ArgMax", "ArgMin",
                         "GatherND", "ScatterND", "ScatterElements"})
    t[op] = keep_whole;
}

}  // namespace kora
