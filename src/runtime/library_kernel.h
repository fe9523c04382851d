// Internal: a library kernel of an artifact (impl "onednn" or "interpreter") rebuilt from
// its manifest entry, for the CPU session (session.cc) and the host steps of a CUDA plan
// (cuda_plan.cc): the kernel's primitives as a graph of their own (constants' bytes from
// `constant`), the kernel object, and where each tensor it takes (in its own order) is in
// the manifest's reads and writes. Throws kora::Error naming `where` when the graph does
// not match the entry.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cpu/library.h"
#include "runtime/manifest.h"

namespace kora {

struct RebuiltKernel {
  std::shared_ptr<PrimGraph> graph;
  std::unique_ptr<CpuLibraryKernel> object;
  std::vector<size_t> reads,
      writes;  // per argument of object->run: its index in k.reads / k.writes
};

RebuiltKernel rebuild_library_kernel(const ManifestKernel& k, const std::string& where,
                                     const std::function<Tensor(const std::string&)>& constant,
                                     const TensorLayouts& layouts = {});

}  // namespace kora
