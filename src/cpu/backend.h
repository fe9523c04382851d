// The CPU backend's identity: its device fingerprint (include/kora/profile_db.h) with the
// compiler that builds its generated kernels and the oneDNN it links, so measurements
// taken with other tools are not reused.
#pragma once

#include <string>

namespace kora {

std::string onednn_version();  // "onednn 2.6.3"

// The CPU of a /proc/cpuinfo text (its first processor): model name, family and model
// number (Zen 3, 4 and 5 parts can share a name) and the ISA extensions generated code and
// oneDNN choose between, e.g. "AMD EPYC|family 26 model 2|avx,avx2,fma,...,avx512_bf16".
std::string cpu_identity(const std::string& cpuinfo);

// The CPU device fingerprint: cpu_identity() of this machine, logical cores, thread count,
// compiler and library versions, e.g.
// "cpu|AMD EPYC|family 26 model 2|avx,...|cores=2|threads=2|g++ 12.2.0|onednn 2.6.3".
std::string cpu_fingerprint(int threads, const std::string& compiler, const std::string& library);
// cpu_fingerprint with the compiler of the generated kernels (empty: the default of
// CxxCompileOptions), the linked oneDNN, how kernels are measured (kCpuMeasureRevision) and
// the generated code's revision (kCpuCodegenRevision), e.g.
// "...|onednn 2.6.3|kora-measure 2|kora-gen 3"; for oneDNN kernels computing in bf16
// (TargetOptions::bf16: measured and stored apart) the revision of what they compute
// (kCpuBf16Revision) and " bf16" after it: "...|kora-gen 3|kora-bf16 2 bf16".
std::string cpu_backend_fingerprint(int threads, const std::string& compiler = "",
                                    bool bf16 = false);
// Whether oneDNN's effective ISA here includes `isa`, a dnnl_cpu_isa_t (the ISAs are bit
// sets: avx512_core_amx includes avx512_core).
bool onednn_isa_has(unsigned isa);

// Why the linked oneDNN computes no bfloat16 convolution or matmul faster than its
// reference implementation on this CPU ("" where it does: AVX-512, avx512_core, which 2.x
// and 3.x need for their bf16 kernels, natively with AVX512-BF16 or AMX, emulated without).
// On such a CPU --bf16 would compile a float32 plan under a bf16 name: the target refuses.
std::string onednn_bf16_missing();

// Whether a device fingerprint is one of bf16 kernels (ends in " bf16").
inline bool bf16_fingerprint(const std::string& device) { return device.ends_with(" bf16"); }

// How the profile measures kernels (src/cpu/profile.cc), revised when that changes what
// a kernel's time means (its records then measured again): 1 a library kernel on one
// object, its weights, reorder buffers and scratchpad found in the cache by every sample;
// 2 rotated through objects and scratchpads with the buffer copies; 3 the constants
// (and objects) rotating through copies of 64 MiB together (up to 32), apart from the
// activations' copies, and a grouped pointwise convolution's "onednn" kernel on plain
// tensors (it was the blocked one).
constexpr int kCpuMeasureRevision = 3;

// What bf16 kernels compute, revised when that changes (their records then measured
// again): 1 float32 activations between kernels; 2 native layouts in bfloat16; 3 a
// matmul's native layouts too (its source, activation weights and destination bfloat16
// in their own order), measured with every matmul.
constexpr int kCpuBf16Revision = 3;

}  // namespace kora
