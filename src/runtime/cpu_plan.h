// The CPU target's plan in a runtime session (src/runtime/plan.h): the manifest, the
// artifact directory, the weights and the session's output tensors in; every kernel bound
// out: generated functions resolved in the kernel libraries (dlopen), library kernels
// (oneDNN, the interpreter) rebuilt from their primitive graphs with constants from the
// weights and told which of their tensors are stored blocked, and one arena for the
// intermediates. Each kernel gets a fixed array of pointers into weights, arena and
// output buffers; only graph inputs are patched in on each run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/plan.h"

namespace kora {

class CpuPlan : public TargetPlan {
 public:
  CpuPlan(const Manifest& manifest, const std::string& dir, std::byte* weights, int threads,
          std::vector<Tensor>& outputs);
  ~CpuPlan() override;
  void run(const std::vector<Tensor>& inputs, std::vector<double>* kernel_ms) override;
  std::string device() const override;
  double plan_ms() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kora
