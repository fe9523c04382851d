// Operators kept whole as opaque primitives: their results depend on data in ways no
// index map or scalar function expresses (selection, sorting, computed indices: TopK,
// NonMaxSuppression, ArgMax/ArgMin, GatherElements, GatherND, ScatterND, ScatterElements;
// interpolation at computed positions: GridSample (RoiAlign in rules_sampling.cc); scatters by
// computed or overlapping positions: Col2Im, MaxUnpool; Det, a pivoting LU). Two more are kept
// whole where their rules find them so: Gather with computed indices (rules_layout.cc) and MaxPool
// with its Indices output (rules_reduce.cc).
#include "fission/builder.h"

namespace kora {
namespace {

void keep_whole(FissionBuilder& b) { b.opaque(); }

}  // namespace

void add_opaque_fission(FissionTable& t) {
  for (const char* op :
       {"TopK", "NonMaxSuppression", "GatherElements", "ArgMax", "ArgMin", "GatherND", "ScatterND",
        "ScatterElements", "GridSample", "Col2Im", "MaxUnpool", "Det"})
    t[op] = keep_whole;
}

}  // namespace kora
