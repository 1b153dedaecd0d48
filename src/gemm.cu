// Matrix products: gemm (C = alpha op(A) op(B) + beta C) and operator*.
//
// Kernels: tensor-core tiles (kernels/gemm_mma.cuh) for double (FP64 DMMA) and float (3xTF32,
// FP32-accurate), CUDA-core SIMT tiles for int32 and for float when FloatMath::simt is set
// (kernels/gemm_simt.cuh), GEMV for m == 1 or n == 1 (kernels/gemm_gemv.cuh). Several tile
// configurations are compiled in per type; a small cost model (waves of CTAs over the SMs,
// occupancy from the CUDA runtime, split-K traffic) picks the configuration and the number of
// k slices from the shape.
#include "detail/runtime.hpp"
#include "kernels/gemm_common.cuh"
#include "kernels/gemm_gemv.cuh"
#include "kernels/gemm_mma.cuh"
#include "kernels/gemm_simt.cuh"
#include "kernels/gemm_tuning.cuh"

#include <devmat/gemm.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace devmat {
namespace detail {
namespace {

// ------------------------------------------------------------------ configurations
// SIMT (float, int32): SimtTile<BK, WARPS_M, WARPS_N, SUB_M, SUB_N, STAGES, MIN_BLOCKS>.
using SimtMid = SimtTile<8, 4, 2, 2, 2, 4, 2>;     // 128x128x8, 256 threads, 8x8 per thread
using SimtBig = SimtTile<8, 2, 4, 4, 2, 4, 1>;     // 128x256x8, 256 threads, 16x8 per thread
using SimtSmall = SimtTile<16, 2, 2, 2, 1, 3, 4>;  // 64x64x16, 128 threads, 8x4 per thread
using SimtWide = SimtTile<16, 2, 4, 2, 2, 3, 1>;    // 64x256x16, 256 threads, 8x8 per thread (m ~ 64)
static_assert(SimtMid::kBM == 128 && SimtMid::kBN == 128 && SimtBig::kBN == 256 && SimtSmall::kBM == 64);

// Tensor cores: MmaTile<T, BM, BN, BK, WARPS_M, WARPS_N, MMA_M, MMA_K, STAGES, MIN_BLOCKS>.
// double (DMMA):
using Dmma128x128 = MmaTile<double, 128, 128, 16, 2, 4, 16, 8, 3, 1>;  // 256 threads, warp tile 64x32
using Dmma128x64 = MmaTile<double, 128, 64, 16, 4, 2, 16, 4, 3, 2>;    // 256 threads, warp tile 32x32
using Dmma64x64 = MmaTile<double, 64, 64, 16, 2, 2, 16, 4, 3, 3>;      // 128 threads, warp tile 32x32
using Dmma128x64m8 = MmaTile<double, 128, 64, 16, 4, 2, 8, 4, 3, 2>;   // as 128x64 with m8n8k4 (sm_80's DMMA)
// float (3xTF32, m16n8k8):
// (Each thread holds its sums twice, the running sums and one k-step's, which rules out warp
// tiles past 64x32.)
using Tf32x128x128 = MmaTile<float, 128, 128, 32, 2, 4, 16, 8, 3, 1>;  // 256 threads, warp tile 64x32
using Tf32x128x64 = MmaTile<float, 128, 64, 32, 4, 2, 16, 8, 3, 1>;    // 256 threads, warp tile 32x32
using Tf32x64x128 = MmaTile<float, 64, 128, 32, 2, 4, 16, 8, 4, 1>;    // 256 threads, warp tile 32x32 (m ~ 64)
using Tf32x64x256 = MmaTile<float, 64, 256, 32, 2, 4, 16, 8, 3, 1>;    // 256 threads, warp tile 32x64 (m ~ 64)
using Tf32x64x64 = MmaTile<float, 64, 64, 32, 2, 2, 16, 8, 3, 2>;      // 128 threads, warp tile 32x32

constexpr int kMaxDevices = 64;
// Kernels index within a dimension in int; this leaves room for a tile past the last index.
constexpr Index kMaxDim = INT_MAX - 256;

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

int current_device() {
  int dev = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
  return dev;
}

/// An attribute of the current device (at least 1), read once per device.
template <cudaDeviceAttr kAttr>
int device_attribute() {
  static std::atomic<int> cache[kMaxDevices] = {};  // 0: not read yet
  const int dev = current_device();
  std::atomic<int>& slot = cache[dev % kMaxDevices];
  int v = slot.load(std::memory_order_relaxed);
  if (v == 0) {
    DEVMAT_CUDA_TRY(cudaDeviceGetAttribute(&v, kAttr, dev));
    v = std::max(v, 1);
    slot.store(v, std::memory_order_relaxed);
  }
  return v;
}

int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }

/// Per-kernel, per-device state: dynamic shared memory allowed past 48 KiB, and the occupancy.
struct KernelState {
  std::atomic<std::uint64_t> prepared{0};
  std::atomic<int> blocks_per_sm[kMaxDevices] = {};
};

template <class K>
void prepare_kernel(KernelState& st, K* kernel, int smem) {
  const std::uint64_t bit = 1ull << (current_device() % kMaxDevices);
  if (st.prepared.load(std::memory_order_acquire) & bit) return;
  DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
  st.prepared.fetch_or(bit, std::memory_order_release);
}

template <class K>
int blocks_per_sm(KernelState& st, K* kernel, int threads, int smem) {
  prepare_kernel(st, kernel, smem);
  std::atomic<int>& slot = st.blocks_per_sm[current_device() % kMaxDevices];
  int n = slot.load(std::memory_order_relaxed);
  if (n == 0) {
    DEVMAT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem));
    n = std::max(n, 1);
    slot.store(n, std::memory_order_relaxed);
  }
  return n;
}

/// One compiled-in tiled configuration, as the host sees it.
template <class T>
struct TiledKernel {
  GemmConfigInfo info;
  double eff;  // modelled rate with the SM full of this kernel, as a fraction of kFmaPerSm<T>
  bool tf32;   // a 3xTF32 kernel (float): skipped under FloatMath::simt
  void (*launch)(const GemmArgs<T>&, dim3, cudaStream_t);
  int (*occupancy)();
};

template <class T, class Cfg>
KernelState& simt_state() {
  static KernelState st;
  return st;
}

template <class T, class Cfg>
void launch_simt(const GemmArgs<T>& p, dim3 grid, cudaStream_t s) {
  auto* kernel = &gemm_simt_kernel<T, Cfg>;
  prepare_kernel(simt_state<T, Cfg>(), kernel, Cfg::kSmemBytes);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(p);
}

template <class T, class Cfg>
int occupancy_simt() {
  return blocks_per_sm(simt_state<T, Cfg>(), &gemm_simt_kernel<T, Cfg>, Cfg::kThreads, Cfg::kSmemBytes);
}

template <class T, class Cfg>
TiledKernel<T> simt_kernel(const char* name, double eff) {
  return {{name, Cfg::kBM, Cfg::kBN, Cfg::kBK, Cfg::kThreads, Cfg::kStages}, eff, false, &launch_simt<T, Cfg>,
          &occupancy_simt<T, Cfg>};
}

template <class Cfg, bool kAK, bool kBK>
void launch_mma_variant(const GemmArgs<typename Cfg::Element>& p, dim3 grid, cudaStream_t s) {
  static KernelState st;
  auto* kernel = &gemm_mma_kernel<Cfg, kAK, kBK>;
  prepare_kernel(st, kernel, Cfg::kSmemBytes);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(p);
}

template <class Cfg>
void launch_mma(const GemmArgs<typename Cfg::Element>& p, dim3 grid, cudaStream_t s) {
  if (p.a.kcontig) {
    if (p.b.kcontig) launch_mma_variant<Cfg, true, true>(p, grid, s);
    else launch_mma_variant<Cfg, true, false>(p, grid, s);
  } else {
    if (p.b.kcontig) launch_mma_variant<Cfg, false, true>(p, grid, s);
    else launch_mma_variant<Cfg, false, false>(p, grid, s);
  }
}

template <class Cfg>
int occupancy_mma() {
  static KernelState st;  // the four layouts share tile sizes; the A row-major one stands for all
  return blocks_per_sm(st, &gemm_mma_kernel<Cfg, true, false>, Cfg::kThreads, Cfg::kSmemBytes);
}

template <class Cfg>
TiledKernel<typename Cfg::Element> mma_kernel(const char* name, double eff) {
  return {{name, Cfg::kBM, Cfg::kBN, Cfg::kBK, Cfg::kThreads, Cfg::kStages},
          eff,
          std::is_same_v<typename Cfg::Element, float>,
          &launch_mma<Cfg>,
          &occupancy_mma<Cfg>};
}

// The efficiencies are the cost model's guesses of each configuration's rate with the GPU
// full; bench_gemm prints every configuration at 4096^3 and on the odd shapes to retune them.
template <class T> const std::vector<TiledKernel<T>>& tiled_kernels();

// float: calibrated from bench_gemm's ours-<config> rows at 4096^3 on an H200 (proportional to
// the measured TFLOP/s, 128x256x8 = 0.80); the 3xTF32 ones are in units of the FFMA peak too.
template <>
const std::vector<TiledKernel<float>>& tiled_kernels<float>() {
  static const std::vector<TiledKernel<float>> v = {simt_kernel<float, SimtMid>("128x128x8", 0.74),
                                                     simt_kernel<float, SimtBig>("128x256x8", 0.80),
                                                     simt_kernel<float, SimtSmall>("64x64x16", 0.64),
                                                     simt_kernel<float, SimtWide>("64x256x16", 0.70),
                                                     mma_kernel<Tf32x128x128>("tf32x3-128x128x32", 0.90),
                                                     mma_kernel<Tf32x128x64>("tf32x3-128x64x32", 0.755),
                                                     mma_kernel<Tf32x64x128>("tf32x3-64x128x32", 0.76),
                                                     mma_kernel<Tf32x64x256>("tf32x3-64x256x32", 0.88),
                                                     mma_kernel<Tf32x64x64>("tf32x3-64x64x32", 0.74)};
  return v;
}

template <>
const std::vector<TiledKernel<std::int32_t>>& tiled_kernels<std::int32_t>() {
  static const std::vector<TiledKernel<std::int32_t>> v = {
      simt_kernel<std::int32_t, SimtMid>("128x128x8", 0.78), simt_kernel<std::int32_t, SimtSmall>("64x64x16", 0.62)};
  return v;
}

template <>
const std::vector<TiledKernel<double>>& tiled_kernels<double>() {
  static const std::vector<TiledKernel<double>> v = {mma_kernel<Dmma128x128>("128x128x16", 0.72),
                                                      mma_kernel<Dmma128x64>("128x64x16", 0.70),
                                                      mma_kernel<Dmma64x64>("64x64x16", 0.52),
                                                      mma_kernel<Dmma128x64m8>("128x64x16-m8n8k4", 0.40)};
  return v;
}

// ------------------------------------------------------------------ the cost model
/// Multiply-adds per second per SM at peak (only ratios between configurations of one type
/// matter, and the split-K traffic term below).
template <class T> constexpr double kFmaPerSm = 128 * 1.7e9;  // FP32 SIMT, FP64 DMMA
template <> constexpr double kFmaPerSm<std::int32_t> = 64 * 1.7e9;
constexpr double kBytesPerSecond = 3.0e12;  // device memory, achieved
constexpr double kLaunchSeconds = 2.5e-6;   // one more kernel in the stream
constexpr double kWaveSeconds = 4e-6;       // pipeline fill and epilogue of one round of CTAs (fit
                                            // to 8192x8192x64, where 31 rounds of k = 64 dominate)
/// Products below this many multiply-adds are latency-bound; there the CUDA-core tiles, whose
/// k tiles are 8 or 16 deep against 32, start sooner (47x804x53: 0.61 against 0.58 TFLOP/s).
constexpr double kTf32MinFma = 1 << 22;
constexpr int kMaxSplits = 64;

long long ceil_div_ll(long long a, long long b) { return (a + b - 1) / b; }

/// k slices of at least this many k (a slice shorter than that is mostly pipeline fill).
int min_split_k(int bk) { return std::max(4 * bk, 64); }

/// splits rounded to what the k tiles allow: every slice has ceil(k_tiles/splits) tiles.
int effective_splits(int k, int bk, int splits) {
  const long long k_tiles = ceil_div_ll(k, bk);
  const long long per = ceil_div_ll(k_tiles, std::max(1, splits));
  return static_cast<int>(ceil_div_ll(k_tiles, per));
}

template <class T>
double model_seconds(const TiledKernel<T>& kc, long long m, long long n, long long k, int splits, int sms, int occ) {
  const GemmConfigInfo& c = kc.info;
  const long long tiles = ceil_div_ll(m, c.bm) * ceil_div_ll(n, c.bn);
  const long long k_tiles = ceil_div_ll(k, c.bk);
  const long long per_split = ceil_div_ll(k_tiles, splits);
  const long long ctas = tiles * ceil_div_ll(k_tiles, per_split);
  const double work = static_cast<double>(c.bm) * c.bn * static_cast<double>(per_split * c.bk);
  const double rate = kFmaPerSm<T> * kc.eff;
  const long long per_sm = ceil_div_ll(ctas, sms);  // CTAs the busiest SM runs
  const long long full = per_sm / occ, rem = per_sm % occ;
  // A round of `occ` CTAs runs at the configuration's full rate, and each CTA's fill and
  // epilogue overlap the others' work; a last round of rem < occ CTAs hides less latency:
  // (rem/occ)^0.6 of that throughput, shared by rem CTAs, and a whole fill and epilogue.
  double t = static_cast<double>(full) * (occ * work / rate + kWaveSeconds / occ);
  if (rem) t += static_cast<double>(rem) * work / (rate * std::pow(static_cast<double>(rem) / occ, 0.6)) + kWaveSeconds;
  // Split-K: the slices' partial sums are written while the kernel computes; the finalize
  // kernel reads them and writes C.
  if (splits > 1)
    t += kLaunchSeconds + static_cast<double>(splits + 1) * static_cast<double>(m * n) * sizeof(T) / kBytesPerSecond;
  return t;
}

/// The best split count for one configuration, and its modelled time.
template <class T>
std::pair<int, double> best_splits(const TiledKernel<T>& kc, int m, int n, int k, int sms) {
  const int occ = kc.occupancy();
  const int max_by_k = std::max(1, k / min_split_k(kc.info.bk));
  // Partial sums in a workspace of at most 1 GiB.
  const long long max_by_ws = std::max<long long>(1, (1ll << 30) / (static_cast<long long>(m) * n * sizeof(T)));
  const int max_splits = static_cast<int>(std::min<long long>({kMaxSplits, max_by_k, max_by_ws}));
  int best = 1;
  double best_t = model_seconds(kc, m, n, k, 1, sms, occ);
  for (int s = 2; s <= max_splits; ++s) {
    const int eff = effective_splits(k, kc.info.bk, s);
    if (eff != s) continue;  // the same as a smaller count
    const double t = model_seconds(kc, m, n, k, s, sms, occ);
    if (t < best_t * 0.98) best = s, best_t = t;  // a split must buy something
  }
  return {best, best_t};
}

std::atomic<FloatMath> g_float_math{FloatMath::tf32x3};
std::atomic<GemvCols> g_gemv_cols{GemvCols::automatic};

bool has_tf32_mma() {  // the TF32 MMA exists from sm_80 on
  return device_attribute<cudaDevAttrComputeCapabilityMajor>() >= 8;
}

/// Whether the cost model may pick this configuration.
template <class T>
bool allowed(const TiledKernel<T>& kc) {
  return !kc.tf32 || (g_float_math.load(std::memory_order_relaxed) == FloatMath::tf32x3 && has_tf32_mma());
}

enum class PlanKind { scale, gemv_rows, gemv_cols, tiled };

struct Plan {
  PlanKind kind = PlanKind::scale;
  int config = 0;
  int splits = 1;
};

/// `a_kcontig`: op(A) is A (rows of A along k); `b_kcontig`: op(B) is B^T.
template <class T>
Plan make_plan(int m, int n, int k, bool a_kcontig, bool b_kcontig, int forced_config, int forced_splits) {
  Plan plan;
  if (k == 0) return plan;
  const int sms = sm_count();
  if (forced_config < 0 && (m == 1 || n == 1)) {
    // m == 1: y = x op(B), the matrix is B; n == 1: y = op(A) x, the matrix is A.
    const bool rows = m == 1 ? b_kcontig : a_kcontig;
    plan.kind = rows ? PlanKind::gemv_rows : PlanKind::gemv_cols;
    return plan;
  }
  plan.kind = PlanKind::tiled;
  const auto& kernels = tiled_kernels<T>();
  if (forced_config >= 0) {
    plan.config = forced_config;
    plan.splits = forced_splits > 0 ? effective_splits(k, kernels[forced_config].info.bk, std::min(forced_splits, 65535))
                                    : best_splits(kernels[forced_config], m, n, k, sms).first;
    return plan;
  }
  double best_t = 0;
  bool found = false;
  const bool tiny = static_cast<double>(m) * n * k < kTf32MinFma;
  for (int i = 0; i < static_cast<int>(kernels.size()); ++i) {
    if (!allowed(kernels[i]) || (tiny && kernels[i].tf32)) continue;
    const auto [s, t] = best_splits(kernels[i], m, n, k, sms);
    if (!found || t < best_t) plan.config = i, plan.splits = s, best_t = t, found = true;
  }
  return plan;
}

// ------------------------------------------------------------------ launchers
template <class T>
void launch_finalize(cudaStream_t s, long long len, int splits, const T* ws, T* c, T alpha, T beta) {
  const long long blocks = std::min<long long>(ceil_div_ll(len, 256), static_cast<long long>(sm_count()) * 8);
  gemm_finalize_kernel<T><<<static_cast<unsigned>(std::max<long long>(blocks, 1)), 256, 0, s>>>(
      len, splits, ws, c, alpha, beta, beta != T(0));
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

/// y (len) = alpha * (matrix times x) + beta * y, memory-bound. `rows`: y[i] = mat row i . x
/// (rows of length k, stride ld); else y[j] = sum_k x[k] mat[k*ld + j].
template <class T>
void run_gemv(const Stream& stream, bool rows, const T* mat, long long ld, int len, int k, const T* x, T alpha,
              T beta, T* y) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const cudaStream_t s = stream.native();
  const int target_blocks = sm_count() * 8;  // 8 blocks of 256 threads fill an SM
  const bool vec = aligned16(mat) && ld % V == 0 && (!rows || aligned16(x));
  long long blocks_x;
  int splits, k_chunk;
  if (rows) {
    blocks_x = ceil_div_ll(len, kGemvThreads / 32);
    const long long want = ceil_div_ll(target_blocks, blocks_x);
    splits = static_cast<int>(std::clamp<long long>(want, 1, std::max(1, k / (128 * V))));
    k_chunk = static_cast<int>(ceil_div_ll(ceil_div_ll(k, splits), 32 * V) * 32 * V);  // a multiple of V
  } else {
    blocks_x = ceil_div_ll(len, 32 * (vec ? V : 1));
    const long long want = ceil_div_ll(target_blocks, blocks_x);
    splits = static_cast<int>(std::clamp<long long>(want, 1, std::max(1, k / 64)));
    k_chunk = static_cast<int>(ceil_div_ll(k, splits));
    // Where k slices are needed and 32-column blocks of 1024 threads (one per SM) cover most
    // SMs, one pass over k keeps as many loads in flight as the slices would, without their
    // second kernel (1x4096x4096 on an H200: 1.57 TFLOP/s against 1.38 with slices, and 1.43
    // with clusters of 8 slices adding up through distributed shared memory, since dropped).
    const long long narrow = ceil_div_ll(len, 32);
    GemvCols how = g_gemv_cols.load(std::memory_order_relaxed);
    if (how == GemvCols::automatic)
      how = splits > 1 && 4 * narrow >= 3ll * sm_count() ? GemvCols::narrow : GemvCols::split;
    if (how == GemvCols::narrow && narrow <= INT_MAX) {
      const GemvOut<T> out{y, nullptr, len, alpha, beta, beta != T(0), false};
      gemv_cols_kernel<T, false, 1024><<<static_cast<unsigned>(narrow), 1024, 0, s>>>(mat, ld, len, k, x, k, out);
      DEVMAT_CUDA_TRY(cudaGetLastError());
      return;
    }
  }
  splits = static_cast<int>(ceil_div_ll(k, k_chunk));
  if (blocks_x > INT_MAX) throw shape_error("devmat: gemm: vector length past the grid limit");
  DeviceMatrix<T> ws;
  if (splits > 1) ws = DeviceMatrix<T>(splits, len, stream);
  const GemvOut<T> out{y, ws.data(), len, alpha, beta, beta != T(0), splits > 1};
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(splits));
  if (rows) {
    if (vec) gemv_rows_kernel<T, true><<<grid, kGemvThreads, 0, s>>>(mat, ld, len, k, x, k_chunk, out);
    else gemv_rows_kernel<T, false><<<grid, kGemvThreads, 0, s>>>(mat, ld, len, k, x, k_chunk, out);
  } else {
    if (vec) gemv_cols_kernel<T, true><<<grid, kGemvThreads, 0, s>>>(mat, ld, len, k, x, k_chunk, out);
    else gemv_cols_kernel<T, false><<<grid, kGemvThreads, 0, s>>>(mat, ld, len, k, x, k_chunk, out);
  }
  DEVMAT_CUDA_TRY(cudaGetLastError());
  if (splits > 1) launch_finalize(s, len, splits, ws.data(), y, alpha, beta);
}

/// C (m x n, row stride ldc) = alpha op(A) op(B) + beta C with one tiled configuration. With
/// several k slices the partial sums go to a dense workspace, so then ldc must be n.
template <class T>
void run_tiled(const Stream& stream, const TiledKernel<T>& kc, int splits, int m, int n, int k,
               const GemmOperand<T>& a, const GemmOperand<T>& b, T alpha, T beta, T* c, long long ldc) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));  // the epilogue's store width
  const GemmConfigInfo& cfg = kc.info;
  splits = effective_splits(k, cfg.bk, splits);
  const long long k_tiles = ceil_div_ll(k, cfg.bk);
  const long long per_split = ceil_div_ll(k_tiles, splits);
  const long long tiles_m = ceil_div_ll(m, cfg.bm), tiles_n = ceil_div_ll(n, cfg.bn);
  if (tiles_m * tiles_n > INT_MAX || splits > 65535) throw shape_error("devmat: gemm: product past the grid limit");

  GemmArgs<T> p{};
  p.m = m, p.n = n, p.k = k;
  p.a = a, p.b = b;
  p.ldc = splits == 1 ? ldc : n;
  p.k_per_split = static_cast<int>(std::min<long long>(per_split * cfg.bk, INT_MAX));
  p.tiles_m = static_cast<int>(tiles_m), p.tiles_n = static_cast<int>(tiles_n);
  DeviceMatrix<T> ws;
  if (splits == 1) {
    p.c = c, p.c_vec = aligned16(c) && ldc % V == 0;
    p.alpha = alpha, p.beta = beta, p.read_c = beta != T(0);
    p.split_stride = 0;
  } else {
    ws = DeviceMatrix<T>(static_cast<Index>(splits) * m, n, stream);
    p.c = ws.data(), p.c_vec = aligned16(ws.data()) && n % V == 0;
    p.alpha = T(1), p.beta = T(0), p.read_c = false;
    p.split_stride = static_cast<long long>(m) * n;
  }
  const dim3 grid(static_cast<unsigned>(tiles_m * tiles_n), 1, static_cast<unsigned>(splits));
  kc.launch(p, grid, stream.native());
  DEVMAT_CUDA_TRY(cudaGetLastError());
  if (splits > 1) launch_finalize(stream.native(), static_cast<long long>(m) * n, splits, ws.data(), c, alpha, beta);
}

// ------------------------------------------------------------------ padded copies
/// Products of at least this many multiply-adds run on row-padded copies of operands whose rows
/// break 16-byte alignment (the copies then cost under a few percent of the product).
constexpr double kPadMinFma = 1 << 30;

Index round_up(Index x, Index to) { return (x + to - 1) / to * to; }

template <class T>
bool rows_aligned(const DeviceMatrix<T>& M) {
  return aligned16(M.data()) && M.cols() % (16 / static_cast<Index>(sizeof(T))) == 0;
}

/// dst (rows x cols, row stride ld_dst) = src (row stride ld_src), on `stream`.
template <class T>
void copy_rows(T* dst, Index ld_dst, const T* src, Index ld_src, Index rows, Index cols, const Stream& stream) {
  DEVMAT_CUDA_TRY(cudaMemcpy2DAsync(dst, ld_dst * sizeof(T), src, ld_src * sizeof(T), cols * sizeof(T), rows,
                                    cudaMemcpyDeviceToDevice, stream.native()));
}

/// M with each row padded to a multiple of 16 bytes (the padding is never read: tile loads
/// stop at the logical row length).
template <class T>
DeviceMatrix<T> padded_copy(const DeviceMatrix<T>& M, const Stream& stream) {
  DeviceMatrix<T> P(M.rows(), round_up(M.cols(), 16 / static_cast<Index>(sizeof(T))), stream);
  copy_rows(P.data(), P.cols(), M.data(), M.cols(), M.rows(), M.cols(), stream);
  return P;
}

/// C (m x n, dense, not aliasing A or B) = alpha op(A) op(B) + beta C, everything on `stream`.
template <class T>
void run_gemm(const Stream& stream, int forced_config, int forced_splits, int m, int n, int k, T alpha,
              const DeviceMatrix<T>& A, Op op_a, const DeviceMatrix<T>& B, Op op_b, T beta, T* c) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const long long len = static_cast<long long>(m) * n;
  if (k == 0 || alpha == T(0)) {  // C = beta C, A and B are not read (as BLAS)
    launch_finalize(stream.native(), len, 0, static_cast<const T*>(nullptr), c, alpha, beta);
    return;
  }
  // Row-major storage: ld is the stored column count either way.
  const bool a_kcontig = op_a == Op::none, b_kcontig = op_b == Op::transpose;
  const Plan plan = make_plan<T>(m, n, k, a_kcontig, b_kcontig, forced_config, forced_splits);
  switch (plan.kind) {
    case PlanKind::scale:
      launch_finalize(stream.native(), len, 0, static_cast<const T*>(nullptr), c, alpha, beta);
      return;
    case PlanKind::gemv_rows:
    case PlanKind::gemv_cols: {
      // m == 1: x is A's only row or column (contiguous either way), the matrix is B;
      // n == 1: x is B's, the matrix is A.
      const bool rows = plan.kind == PlanKind::gemv_rows;
      if (m == 1) run_gemv(stream, rows, B.data(), B.cols(), n, k, A.data(), alpha, beta, c);
      else run_gemv(stream, rows, A.data(), A.cols(), m, k, B.data(), alpha, beta, c);
      return;
    }
    case PlanKind::tiled: {
      // Rows whose length breaks 16-byte alignment make the kernels copy and store element by
      // element. When the product is large, a copy whose rows are padded to 16 bytes costs
      // far less than that (4097^3 float: ~0.1 ms of copies against ~1 ms lost).
      const bool pad = static_cast<double>(m) * n * k >= kPadMinFma;
      DeviceMatrix<T> a_pad, b_pad, c_pad;
      const DeviceMatrix<T>* a_src = &A;
      const DeviceMatrix<T>* b_src = &B;
      if (pad && !rows_aligned(A)) a_pad = padded_copy(A, stream), a_src = &a_pad;
      if (pad && !rows_aligned(B)) b_pad = padded_copy(B, stream), b_src = &b_pad;
      const GemmOperand<T> a{a_src->data(), a_src->cols(), a_kcontig, rows_aligned(*a_src)};
      const GemmOperand<T> b{b_src->data(), b_src->cols(), b_kcontig, rows_aligned(*b_src)};
      // C is padded only with one k slice (split-K partial sums go to a dense workspace).
      if (pad && n % V != 0 && plan.splits == 1) {
        c_pad = DeviceMatrix<T>(m, round_up(n, V), stream);
        if (beta != T(0)) copy_rows(c_pad.data(), c_pad.cols(), c, n, m, n, stream);
        run_tiled(stream, tiled_kernels<T>()[plan.config], 1, m, n, k, a, b, alpha, beta, c_pad.data(),
                  static_cast<long long>(c_pad.cols()));
        copy_rows(c, n, c_pad.data(), c_pad.cols(), m, n, stream);
      } else {
        run_tiled(stream, tiled_kernels<T>()[plan.config], plan.splits, m, n, k, a, b, alpha, beta, c,
                  static_cast<long long>(n));
      }
      return;
    }
  }
}

struct Dims {
  Index m, n, k;
};

/// Shape checks, before anything is allocated or launched.
template <class T>
Dims check_gemm(const char* name, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, const DeviceMatrix<T>& C,
                Op op_a, Op op_b) {
  const Index m = op_a == Op::none ? A.rows() : A.cols();
  const Index ka = op_a == Op::none ? A.cols() : A.rows();
  const Index kb = op_b == Op::none ? B.rows() : B.cols();
  const Index n = op_b == Op::none ? B.cols() : B.rows();
  if (ka != kb) throw_shape_error(name, m, ka, kb, n, "(op(A) and op(B)) do not match: inner dimensions differ");
  if (!C.empty() && (C.rows() != m || C.cols() != n))
    throw_shape_error(name, C.rows(), C.cols(), m, n, "(C and op(A)*op(B)) do not match");
  if (m > kMaxDim || n > kMaxDim || ka > kMaxDim)
    throw_shape_error(name, m, ka, kb, n, "have a dimension past 2^31-257, which gemm does not support");
  return {m, n, ka};
}

template <class T>
void gemm_impl(const char* name, int forced_config, int forced_splits, T alpha, const DeviceMatrix<T>& A,
               const DeviceMatrix<T>& B, T beta, DeviceMatrix<T>& C, Op op_a, Op op_b) {
  const Dims d = check_gemm(name, A, B, C, op_a, op_b);
  if (forced_config < -1 || forced_config >= static_cast<int>(tiled_kernels<T>().size()))
    throw std::invalid_argument("devmat: gemm_forced: no configuration " + std::to_string(forced_config));
  if (forced_config >= 0 && tiled_kernels<T>()[forced_config].tf32 && !has_tf32_mma())
    throw std::invalid_argument("devmat: gemm_forced: configuration " + std::to_string(forced_config) +
                                " needs the TF32 tensor cores (sm_80 or later)");
  if (C.empty() && (C.rows() != d.m || C.cols() != d.n)) {
    C = DeviceMatrix<T>(d.m, d.n, C.stream());  // beta*C is taken as zero
    beta = T(0);
  }
  if (d.m == 0 || d.n == 0) return;
  const Stream stream = C.stream();
  if (C.data() == A.data() || C.data() == B.data()) {
    // C is an operand: compute into a fresh matrix (starting from C's values when beta needs
    // them), then give it to C; the old buffer is freed once the kernels reading it are done.
    DeviceMatrix<T> fresh(d.m, d.n, stream);
    if (beta != T(0)) {
      use_on(stream, C);
      DEVMAT_CUDA_TRY(cudaMemcpyAsync(fresh.data(), C.data(), static_cast<std::size_t>(C.size()) * sizeof(T),
                                      cudaMemcpyDeviceToDevice, stream.native()));
    }
    gemm_impl(name, forced_config, forced_splits, alpha, A, B, beta, fresh, op_a, op_b);
    C = std::move(fresh);
    return;
  }
  use_on(stream, A, B, C);
  run_gemm(stream, forced_config, forced_splits, static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k),
           alpha, A, op_a, B, op_b, beta, C.data());
}

}  // namespace

template <class T>
DeviceMatrix<T> multiply(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.cols() != b.rows()) throw_shape_error("operator*", a.rows(), a.cols(), b.rows(), b.cols());
  DeviceMatrix<T> c(a.rows(), b.cols(), a.stream());  // the result carries A's stream
  gemm_impl("operator*", -1, 0, T(1), a, b, T(0), c, Op::none, Op::none);
  return c;
}

template <class T>
std::vector<GemmConfigInfo> gemm_configs() {
  std::vector<GemmConfigInfo> v;
  for (const auto& k : tiled_kernels<T>()) v.push_back(k.info);
  return v;
}

template <class T>
void gemm_forced(int config, int splits, T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta,
                 DeviceMatrix<T>& C, Op op_a, Op op_b) {
  gemm_impl("gemm", config, splits, alpha, A, B, beta, C, op_a, op_b);
}

template <class T>
std::string gemm_plan(Index m, Index n, Index k, Op op_a, Op op_b) {
  if (m <= 0 || n <= 0 || k <= 0) return "none";
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim) return "unsupported";
  const Plan p = make_plan<T>(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), op_a == Op::none,
                              op_b == Op::transpose, -1, 0);
  switch (p.kind) {
    case PlanKind::scale: return "none";
    case PlanKind::gemv_rows: return "gemv-rows";
    case PlanKind::gemv_cols: return "gemv-cols";
    case PlanKind::tiled: break;
  }
  return tiled_kernels<T>()[p.config].info.name + " s=" + std::to_string(p.splits);
}

}  // namespace detail

void set_float_math(FloatMath mode) noexcept { detail::g_float_math.store(mode, std::memory_order_relaxed); }

void detail::gemv_cols_force(GemvCols variant) { detail::g_gemv_cols.store(variant, std::memory_order_relaxed); }

FloatMath float_math() noexcept { return detail::g_float_math.load(std::memory_order_relaxed); }

template <class T>
void gemm(T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta, DeviceMatrix<T>& C, Op op_a, Op op_b) {
  detail::gemm_impl("gemm", -1, 0, alpha, A, B, beta, C, op_a, op_b);
}

#define DEVMAT_INSTANTIATE(T)                                                                              \
  template void gemm<T>(T, const DeviceMatrix<T>&, const DeviceMatrix<T>&, T, DeviceMatrix<T>&, Op, Op); \
  template DeviceMatrix<T> detail::multiply<T>(const DeviceMatrix<T>&, const DeviceMatrix<T>&);          \
  template std::vector<detail::GemmConfigInfo> detail::gemm_configs<T>();                                \
  template void detail::gemm_forced<T>(int, int, T, const DeviceMatrix<T>&, const DeviceMatrix<T>&, T,  \
                                       DeviceMatrix<T>&, Op, Op);                                        \
  template std::string detail::gemm_plan<T>(Index, Index, Index, Op, Op);
DEVMAT_INSTANTIATE(float)
DEVMAT_INSTANTIATE(double)
DEVMAT_INSTANTIATE(std::int32_t)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
