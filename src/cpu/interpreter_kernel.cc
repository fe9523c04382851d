// The interpreter kernel (src/cpu/library.h): a candidate in; a kernel that runs
// the reference interpreter's run_primitive() member by member out. It copies the
// kernel's inputs into tensors, keeps members' values as tensors and copies the written
// ones out (constants are used in place: the `in` pointer of a constant is ignored),
// so it is slow; it exists for opaque primitives and as the always-available
// implementation of any candidate.
#include <cstring>
#include <map>

#include "cpu/library.h"
#include "kora/error.h"
#include "kora/interpreter.h"

namespace kora {
namespace {

class InterpreterKernel : public CpuLibraryKernel {
 public:
  InterpreterKernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c)
      : graph_(graph), reads_(kernel_reads(graph, dag, c)), writes_(kernel_writes(graph, dag, c)) {
    for (int v : c.members) members_.push_back(&graph.prims[dag.prim[v]]);
  }

  void run(const void* const* in, void* const* out) override {
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < reads_.size(); ++i) {
      // Constants are the graph's (known when the kernel is made, like oneDNN's weights):
      // no copy of, say, a 94 MB embedding table per call.
      if (const Tensor* constant = graph_.constant(reads_[i])) {
        values[reads_[i]] = *constant;
        continue;
      }
      const ValueInfo& info = graph_.value(reads_[i]);
      values[reads_[i]] = Tensor(info.dtype, info.shape, in[i],
                                 dtype_size(info.dtype) * static_cast<size_t>(numel(info.shape)));
    }
    for (const Primitive* p : members_) {
      std::vector<const Tensor*> args;
      for (const std::string& t : p->inputs) {
        auto it = values.find(t);
        if (it == values.end()) {
          const Tensor* constant = graph_.constant(t);
          if (!constant)
            throw Error("interpreter kernel: " + p->describe() + " reads '" + t +
                        "', which the kernel neither reads nor computes");
          args.push_back(constant);
        } else {
          args.push_back(&it->second);
        }
      }
      std::vector<Tensor> results = run_primitive(graph_, *p, args);
      for (size_t o = 0; o < results.size(); ++o) values[p->outputs[o]] = std::move(results[o]);
    }
    for (size_t i = 0; i < writes_.size(); ++i) {
      const Tensor& t = values.at(writes_[i]);
      std::memcpy(out[i], t.bytes(), t.nbytes());
    }
  }

  std::string schedule() const override { return "interpreter"; }

 private:
  const PrimGraph& graph_;
  std::vector<std::string> reads_, writes_;
  std::vector<const Primitive*> members_;
};

}  // namespace

std::unique_ptr<CpuLibraryKernel> make_interpreter_kernel(const PrimGraph& graph,
                                                          const KernelDag& dag,
                                                          const Candidate& c) {
  return std::make_unique<InterpreterKernel>(graph, dag, c);
}

}  // namespace kora
