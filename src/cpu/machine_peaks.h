// The CPU's peaks, the parameters of the kernels' lower bounds (include/kora/cost.h,
// LowerBoundCost; measure on demand): kora's thread count in, MachinePeaks out:
//   gflops      oneDNN's float32 GEMM (dnnl_sgemm, 1024 x 1024 x 1024), the best of five;
//   dram_gbps   bytes copied per second (read and written) between two buffers four times
//               the last-level cache (at least 64 MiB, at most 512 MiB), each thread its
//               part, by memcpy and by a vector loop; the best of three each;
//   cache_gbps  the same within buffers of a quarter of each core's L2 cache, copied over
//               and over by every thread at once;
//   cache_bytes the last-level cache (Linux's cache topology, else sysconf);
//   floor_ms    0: a kernel may do nothing (a view).
// Each peak is multiplied by a margin (kPeakMargin: kernels that beat the measured copy
// or GEMM a little must stay above their bounds; bench/bounds.cc checks the bounds against
// every measured kernel of a profile database). Measuring takes about a second: cpu_peaks
// does it once per device fingerprint and keeps the result in the profile database.
#pragma once

#include <string>

#include "kora/cost.h"

namespace kora {

class ProfileDb;

inline constexpr double kPeakMargin = 1.5;

MachinePeaks measure_cpu_peaks(int threads);

// AVX512-BF16's dot product (vdpbf16ps) computes two bf16 products per float32 lane in one
// instruction, twice the FMA's: oneDNN's bf16 convolutions beat the float32 GEMM's peak
// (YOLOv8n's full bf16 profile: 52 of 6,723 linear kernels below it, the least at 0.83x).
// AMX tiles (Intel Xeon since Sapphire Rapids, which oneDNN uses for bf16 where the CPU and
// the kernel allow): TDPBF16PS does 1,024 bf16 FLOPs per cycle and core, AVX-512's FMAs 64
// float32 ones. Measured peaks do not serve here: oneDNN's bf16 matmul ran 620 to 1,900
// GFLOP/s on one 2-core Xeon, and its 1x1 convolutions above its matmuls.
inline constexpr double kBf16ComputeFactor = 2;
inline constexpr double kAmxBf16ComputeFactor = 16;

// kAmxBf16ComputeFactor where oneDNN's effective ISA has AMX, else kBf16ComputeFactor.
double bf16_compute_factor();

// The device's peaks from the database (device fact "peaks"), measured and stored when
// missing; measured while other processes use the CPU, they are measured again once the
// machine is quiet, and not stored when it never is. `bf16` (kora's --bf16): the GEMM peak
// times bf16_compute_factor() (what is stored stays the float32 measurement).
MachinePeaks cpu_peaks(ProfileDb& db, const std::string& device, int threads, bool bf16 = false);

}  // namespace kora
