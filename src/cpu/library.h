// Library-backed CPU kernels: a candidate in, an object that computes it by calling a
// library out. Two kinds:
//   oneDNN      matmul and convolution primitives, with the candidate's epilogue as
//               post-ops where it fits (src/cpu/onednn_kernel.cc);
//   interpreter the reference interpreter run member by member: opaque primitives, and
//               any kernel no faster implementation accepts (src/cpu/interpreter_kernel.cc).
// Same calling convention as generated kernels (src/cpu/codegen.h): `in` in
// kernel_reads() order, `out` in kernel_writes() order, each pointer to its tensor's
// elements; but a library kernel may take graph constants from the graph when built and
// ignore their `in` pointers (oneDNN: the weights; the interpreter: every constant).
// Threads: the process's OpenMP runtime (omp_set_num_threads).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "base/layout_map.h"
#include "kora/candidates.h"
#include "kora/kernel_dag.h"
#include "kora/primitive.h"

namespace kora {

class CpuLibraryKernel {
 public:
  virtual ~CpuLibraryKernel() = default;
  virtual void run(const void* const* in, void* const* out) = 0;
  // run() on plain row-major tensors, whatever layouts the kernel was built for
  // (TensorLayouts): what the profile checks against the interpreter.
  virtual void run_plain(const void* const* in, void* const* out) { run(in, out); }
  // The schedule name stored in the profile database ("onednn", "interpreter").
  virtual std::string schedule() const = 0;
};

// Where a kernel's float32 activations are stored: tensor name -> a oneDNN layout name
// ("acdb": channels last; "aBcd8b", "aBcd16b": channels in blocks of 8 or 16; likewise
// for rank 3 and 5), with kBf16 after it ("aBcd16b+bf16") for one stored as bfloat16 (in
// a buffer of the float32 tensor's size; --bf16 only), or the plain order stored as
// bfloat16 ("abc+bf16"). A tensor not named is plain row-major float32. Only oneDNN
// convolutions take blocked tensors, as their source, destination or full-shape post-op
// operands; bf16 matmuls take their source, runtime weights and destination as bfloat16
// in their own order.
using TensorLayouts = std::map<std::string, std::string>;
// The profile database's schedule for a oneDNN convolution measured in its native
// layouts (onednn_native_layouts: no reorders, as between two such convolutions in an
// artifact); "onednn" is the same kernel on plain tensors, reorders included.
inline constexpr char kOnednnNative[] = "onednn:native";
// The same native primitive on plain tensors, reordering every blocked side at the kernel
// boundary (what the native implementation costs where no neighbour keeps a side blocked).
inline constexpr char kOnednnBlocked[] = "onednn:blocked";

// A oneDNN convolution measured natively with every side channels last (acdb; acb, acdeb
// for rank 3, 5) where the layouts its implementation picks are others (channel blocks:
// grouped convolutions of 8 channels a group pick aBcd8b) and it has a direct
// channels-last implementation too: the alternative that lets such a convolution share
// its tensors with the channels-last kernels around it (onednn_channels_last_layouts).
inline constexpr char kOnednnChannelsLast[] = "onednn:native-cl";

// A oneDNN convolution computed with oneDNN's Winograd algorithm (F(4x4,3x3) or
// F(2x2,3x3): 3x3 stride-1 convolutions, float32; 1.3-3x the direct kernels' speed on
// most channel counts, slower on few channels, so measured as a schedule of its own), on
// plain tensors: its blocked layouts reordered at the kernel boundary.
inline constexpr char kOnednnWinograd[] = "onednn:winograd";
// A oneDNN schedule ending in kBf16 ("onednn+bf16", "onednn:native+bf16"): the same
// kernel reading its source and weights as bfloat16 (TargetOptions::bf16, an explicit
// option); the profile database stores it under its float32 name, in the bf16 device's
// records, and an artifact's manifest names it with the suffix (kBf16, has_bf16_suffix:
// src/base/layout_map.h, which bfloat16 layouts share).
// The profile database's oneDNN schedules (without the bf16 suffix).
inline bool is_onednn_schedule(const std::string& schedule) {
  return schedule == "onednn" || schedule == kOnednnNative || schedule == kOnednnBlocked ||
         schedule == kOnednnWinograd || schedule == kOnednnChannelsLast;
}
// Whether the candidate is a convolution oneDNN computes with Winograd (kOnednnWinograd).
bool onednn_winograd_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// The oneDNN kernels the calling thread runs next take their scratchpad from its slot
// `copy` (modulo kScratchpadSlots). Slot 0, the default, is the one a running plan's kernels
// share; the profile, measuring a kernel over rotating copies of its buffers, rotates the
// scratchpad with them, so that no sample finds the last one's scratchpad in the cache (a
// running plan has evicted it: a Winograd convolution's was 0.64 ms alone, 1.2 in plan).
inline constexpr int kScratchpadSlots = 8;
void select_onednn_scratchpad(int copy);

// Whether make_onednn_kernel accepts the candidate.
bool onednn_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);
// Throws kora::Error naming the candidate's primitives when it is not supported, or when
// `layouts` names a layout it cannot take. `schedule` kOnednnBlocked runs a convolution's
// blocked primitive whatever its tensors' layouts (else the faster for its shape),
// kOnednnWinograd its Winograd one; a schedule ending in kBf16 computes in bf16.
std::unique_ptr<CpuLibraryKernel> make_onednn_kernel(const PrimGraph& graph, const KernelDag& dag,
                                                     const Candidate& c,
                                                     const TensorLayouts& layouts = {},
                                                     const std::string& schedule = "onednn");
// The layouts a oneDNN convolution with constant weights runs in without reorders: the
// blocked source and destination its direct (jit) implementation picks, and the
// destination's for full-shape operands; a side that is plain, padded beyond the plain
// size or not among the names above is left out. bf16: the kernel computing in bf16,
// its sides stored in bfloat16 (activations kept bf16 between two such kernels). A bf16
// matmul's: its source, runtime weights and destination as bfloat16 in their own order
// ("abc+bf16"), which generated code writes and reads beside it (bfloat16_sides). Empty
// for float32 matmuls, gemm-based convolutions and candidates oneDNN does not take.
TensorLayouts onednn_native_layouts(const PrimGraph& graph, const KernelDag& dag,
                                    const Candidate& c, bool bf16 = false);
// The sides of onednn_native_layouts, each channels last, where one of them is not and
// oneDNN has a direct (jit) implementation on channels-last sides; else empty. bf16: the
// kernel computing in bf16, its sides bfloat16 ("acdb+bf16").
TensorLayouts onednn_channels_last_layouts(const PrimGraph& graph, const KernelDag& dag,
                                           const Candidate& c, bool bf16 = false);
// Whether generated code computes the candidate the same on any layout: elementwise
// members only (so every tensor it touches has one shape, and element i of an output
// depends on element i of the inputs alone), float32 throughout, no constants read. Its
// tensors must then all share one layout, a float32 one (bfloat16 ones it reads through
// layout views only: layout_view_sides).
bool layout_agnostic(const PrimGraph& graph, const KernelDag& dag, const Candidate& c);

// Every candidate; slow, but always available.
std::unique_ptr<CpuLibraryKernel> make_interpreter_kernel(const PrimGraph& graph,
                                                          const KernelDag& dag, const Candidate& c);

}  // namespace kora
