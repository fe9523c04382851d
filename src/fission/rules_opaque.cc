// Operators kept whole as opaque primitives: their results depend on data in ways no
// index map or scalar function expresses. Selection, sorting and computed indices: TopK,
// NonMaxSuppression, ArgMax/ArgMin, GatherElements, GatherND, ScatterND, ScatterElements
// (and the old Scatter, as ScatterElements). Interpolation at computed positions:
// GridSample, DeformConv (RoiAlign in rules_sampling.cc). Scatters by computed or
// overlapping positions: Col2Im, MaxUnpool. Det, a pivoting LU. TfIdfVectorizer, n-gram
// look-ups in a trie (interpreter tfidf.cc). Two more are kept whole where their rules
// find them so: Gather with computed indices (rules_layout.cc) and MaxPool with its
// Indices output (rules_reduce.cc).
#include "fission/builder.h"

namespace kora {
namespace {

void keep_whole(FissionBuilder& b) { b.opaque(); }

// Scatter (opsets 9 and 10) is ScatterElements without a reduction.
void scatter(FissionBuilder& b) {
  Node node = b.node();
  node.op_type = "ScatterElements";
  node.inputs = {b.in(0), b.in(1), b.in(2)};
  b.bind(0, b.opaque_node(std::move(node), {b.out_info(0)})[0]);
}

}  // namespace

void add_opaque_fission(FissionTable& t) {
  t["Scatter"] = scatter;
  for (const char* op : {"TopK", "NonMaxSuppression", "GatherElements", "ArgMax", "ArgMin",
                         "GatherND", "ScatterND", "ScatterElements", "GridSample", "Col2Im",
                         "MaxUnpool", "Det", "DeformConv", "TfIdfVectorizer"})
    t[op] = keep_whole;
}

}  // namespace kora
