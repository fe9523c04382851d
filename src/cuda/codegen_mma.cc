// A tensor-core GEMM that kora generates (issue 27: the Tensor-core half of Tacker's
// horizontal fusion needs a GEMM kora writes, not cuBLAS's): a CudaGemm (batch, strides,
// transposed operands, alpha, a bias of n values, a residual of D's layout, a ReLU: what
// cuBLASLt fuses) and a tile in; one __global__ function out, TF32 WMMA (nvcuda::wmma,
// m16n16k8) through NVRTC. Each block computes a BM x BN tile of one batch element's D
// with BM/32 x BN/32 warps, each warp a 32 x 32 sub-tile as 2 x 2 accumulator fragments:
//   for each K step of 16: the block stages A's BM x 16 and B's 16 x BN elements in shared
//   memory, rounded to TF32 (zeros beyond the matrix edges, so any m, n, k works), then
//   each warp multiplies its fragments twice (k = 8 each);
//   then the accumulators go through shared memory (the staging buffers' own), and each
//   thread applies the epilogue (alpha, + bias[j], + C[i][j], ReLU, in cuBLASLt's order)
//   to elements of the tile and stores those inside D.
// TF32 multiplies (10-bit mantissas) with float32 accumulation: an explicit option (--tf32),
// checked to kTf32Tolerance like cuBLAS's TF32 math. Functions take the kernel's reads and
// writes as generated kernels do (in0.., out0); D is out0.
#include <sstream>

#include "codegen/scalar.h"
#include "cuda/codegen_internal.h"
#include "cuda/library_plan.h"
#include "kora/error.h"

namespace kora {

std::vector<CudaMmaTile> cuda_mma_tiles() { return {{64, 64}, {32, 32}}; }

std::string CudaMmaTile::key() const {
  return "mma:" + std::to_string(bm) + "x" + std::to_string(bn);
}

std::string cuda_mma_symbol(uint64_t signature, const CudaMmaTile& tile) {
  return "kora_" + signature_hex(signature) + "_mma" + std::to_string(tile.bm) + "x" +
         std::to_string(tile.bn);
}

std::optional<CudaMmaTile> cuda_mma_tile(const std::string& key) {
  for (const CudaMmaTile& t : cuda_mma_tiles())
    if (t.key() == key) return t;
  return std::nullopt;
}

CudaKernel generate_mma_gemm(const CudaGemm& g, const std::vector<std::string>& reads,
                             const std::vector<std::string>& writes, const std::string& symbol,
                             const CudaMmaTile& tile, bool device_body) {
  if (tile.bm % 32 || tile.bn % 32 || tile.bm < 32 || tile.bn < 32 || g.m <= 0 || g.n <= 0 ||
      g.k <= 0 || writes.size() != 1)
    throw Error("cuda codegen: mma GEMM of tile " + tile.key() + " does not fit");
  const int threads = tile.bm / 32 * (tile.bn / 32) * 32;
  const int64_t tiles_m = (g.m + tile.bm - 1) / tile.bm, tiles_n = (g.n + tile.bn - 1) / tile.bn;
  auto in = [](int i) { return "in" + std::to_string(i); };
  // A K step's staging loop: buf[r][c] = src's element (r0 + r, c0 + c) of its rows x cols
  // tile, stored transposed or not with `ld` elements a row, rounded to TF32; 0 beyond
  // (r_end, c_end).
  auto stage = [](const std::string& buf, const std::string& rows, const std::string& cols,
                  const std::string& r0, const std::string& c0, int64_t r_end, int64_t c_end,
                  const std::string& src, bool trans, int64_t ld) {
    const std::string at =
        trans ? "c * " + std::to_string(ld) + "LL + r" : "r * " + std::to_string(ld) + "LL + c";
    return "    for (int e = threadIdx.x; e < " + rows + " * " + cols + "; e += T) {\n" +
           "      const long long r = " + r0 + " + e / " + cols + ", c = " + c0 + " + e % " + cols +
           ";\n" + "      " + buf + "[e / " + cols + "][e % " + cols + "] = r < " +
           std::to_string(r_end) + "LL && c < " + std::to_string(c_end) +
           "LL ? wmma::__float_to_tf32(" + src + "[" + at + "]) : 0.0f;\n    }\n";
  };
  std::ostringstream os;
  os << "#include <mma.h>\n";
  if (device_body)  // a part of a horizontal kernel, its block index given
    os << "__device__ __forceinline__ void " << symbol << "_0(const kora_block_index blockIdx, ";
  else
    os << "extern \"C\" __global__ void __launch_bounds__(" << threads << ") " << symbol << "_0(";
  for (size_t i = 0; i < reads.size(); ++i) os << "const float* __restrict__ in" << i << ", ";
  os << "float* __restrict__ out0) {\n"
     << "  using namespace nvcuda;\n"
     << "  constexpr int BM = " << tile.bm << ", BN = " << tile.bn << ", BK = 16, T = " << threads
     << ";\n"
     // The tile of D goes through the staging buffers' memory once they are read: 17 KiB
     // of shared memory for 64 x 64, so that two such GEMMs fit one horizontal launch.
     << "  constexpr int SA = BM * (BK + 4), SB = BK * (BN + 4), SC = BM * (BN + 4);\n"
     << "  __shared__ __align__(32) float smem[SA + SB > SC ? SA + SB : SC];\n"
     << "  float(*As)[BK + 4] = reinterpret_cast<float(*)[BK + 4]>(smem);\n"
     << "  float(*Bs)[BN + 4] = reinterpret_cast<float(*)[BN + 4]>(smem + SA);\n"
     << "  float(*Cs)[BN + 4] = reinterpret_cast<float(*)[BN + 4]>(smem);\n"
     << "  const long long t = blockIdx.x % " << tiles_m * tiles_n << "LL;\n"
     << "  const long long batch = blockIdx.x / " << tiles_m * tiles_n << "LL;\n"
     << "  const long long i0 = t / " << tiles_n << " * BM, j0 = t % " << tiles_n << " * BN;\n"
     << "  const float* A = " << in(g.read_a) << " + batch * " << g.stride_a << "LL;\n"
     << "  const float* B = " << in(g.read_b) << " + batch * " << g.stride_b << "LL;\n"
     << "  const int warp = threadIdx.x >> 5;\n"
     << "  const int wi = warp / (BN / 32) * 32, wj = warp % (BN / 32) * 32;\n"
     << "  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];\n"
     << "  for (int x = 0; x < 2; ++x)\n"
     << "    for (int y = 0; y < 2; ++y) wmma::fill_fragment(acc[x][y], 0.0f);\n"
     << "  for (long long k0 = 0; k0 < " << g.k << "LL; k0 += BK) {\n"
     << stage("As", "BM", "BK", "i0", "k0", g.m, g.k, "A", g.trans_a, g.lda())
     << stage("Bs", "BK", "BN", "k0", "j0", g.k, g.n, "B", g.trans_b, g.ldb())
     << "    __syncthreads();\n"
     << "    for (int kk = 0; kk < BK; kk += 8) {\n"
     << "      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> "
        "a[2];\n"
     << "      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> "
        "b[2];\n"
     << "      for (int x = 0; x < 2; ++x) wmma::load_matrix_sync(a[x], &As[wi + 16 * x][kk], BK + "
        "4);\n"
     << "      for (int y = 0; y < 2; ++y) wmma::load_matrix_sync(b[y], &Bs[kk][wj + 16 * y], BN + "
        "4);\n"
     << "      for (int x = 0; x < 2; ++x)\n"
     << "        for (int y = 0; y < 2; ++y) wmma::mma_sync(acc[x][y], a[x], b[y], acc[x][y]);\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n"
     << "  for (int x = 0; x < 2; ++x)\n"
     << "    for (int y = 0; y < 2; ++y)\n"
     << "      wmma::store_matrix_sync(&Cs[wi + 16 * x][wj + 16 * y], acc[x][y], BN + 4,\n"
     << "                              wmma::mem_row_major);\n"
     << "  __syncthreads();\n"
     << "  for (int e = threadIdx.x; e < BM * BN; e += T) {\n"
     << "    const long long i = i0 + e / BN, j = j0 + e % BN;\n"
     << "    if (i >= " << g.m << "LL || j >= " << g.n << "LL) continue;\n"
     << "    const long long at = batch * " << g.stride_c << "LL + i * " << g.n << "LL + j;\n"
     << "    float v = " << codegen::literal(g.alpha, DType::kFloat32)
     << " * Cs[e / BN][e % BN];\n";
  if (g.read_c >= 0) os << "    v += " << in(g.read_c) << "[at];\n";
  if (g.read_bias >= 0) os << "    v += " << in(g.read_bias) << "[j];\n";
  if (g.relu) os << "    v = v > 0.0f ? v : 0.0f;\n";
  os << "    out0[at] = v;\n"
     << "  }\n"
     << "}\n";
  CudaKernel k;
  k.symbol = symbol;
  k.reads = reads;
  k.writes = writes;
  k.source = os.str();
  CudaLaunch l;
  l.function = symbol + "_0";
  l.work = g.batch * tiles_m * tiles_n;
  l.per_block = 1;
  l.block = threads;
  k.launches.push_back(l);
  return k;
}

bool cuda_mma_supports(const PrimGraph& graph, const KernelDag& dag, const Candidate& c) {
  return cuda_gemm_plan(graph, dag, c) || cuda_mma_pair_supports(graph, dag, c);
}

CudaKernel generate_mma_kernel(const PrimGraph& graph, const KernelDag& dag, const Candidate& c,
                               const std::string& symbol, const CudaMmaTile& tile) {
  if (const std::optional<CudaGemm> gemm = cuda_gemm_plan(graph, dag, c))
    return generate_mma_gemm(*gemm, kernel_reads(graph, dag, c), kernel_writes(graph, dag, c),
                             symbol, tile);
  return generate_mma_pair(graph, dag, c, symbol, tile);
}

}  // namespace kora
