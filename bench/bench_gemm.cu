// GEMM: ours beside cuBLAS SGEMM / DGEMM (default math mode, so no TF32) on the same inputs,
// row-major C = A*B handed to cuBLAS as the column-major C^T = B^T A^T.
//
// Names: gemm/<f32|f64>/<M>x<N>x<K>/ours | cublas, plus ours-<config> for every configuration
// compiled in (forced, with the cost model's split count) at 4096^3 and on the odd shapes (double:
// at every size), so one run shows which configuration wins where. The label of "ours" says what gemm chose.
// For float, "ours" is the default FloatMath::tf32x3 (3xTF32 on the tensor cores, FP32
// accuracy), and ours-simt is gemm under FloatMath::simt (FFMA on the CUDA cores only).
//
// Float rows of ours also carry the error of our result and of cuBLAS's, on the same inputs,
// against an FP64 reference (cuBLAS DGEMM of the inputs widened to double): counters err and
// err_cublas (||C - C64||_F / ||C64||_F, the bench's data in [-1, 1)), err_pos and
// err_pos_cublas (the same inputs folded to [0, 1), where rounding errors do not cancel).
//
// Timing measures the device: each timed batch of R products (R chosen so a batch takes a
// few hundred microseconds) is queued behind a short spin kernel, so that host launch
// overhead does not leave the GPU idle inside the timed interval; inputs rotate over up to 32
// copies so that small problems do not all run from L2. Before timing, our result is checked
// against cuBLAS's (normalised error), and the run aborts if it is wrong.
#include "queued.cuh"
#include "support.hpp"

#include "dispatch/gemm_tuning.hpp"

#include <devmat/devmat.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;
using b::dtype;

#define BENCH_CUBLAS(call)                                                                    \
  do {                                                                                        \
    const cublasStatus_t s_ = (call);                                                         \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, int(s_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t handle;
    BENCH_CUBLAS(cublasCreate(&handle));
    BENCH_CUBLAS(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));  // no TF32
    return handle;
  }();
  return h;
}

/// Row-major C (m x n) = A (m x k) * B (k x n) through cuBLAS, on `stream`.
void cublas_gemm(cudaStream_t stream, Index m, Index n, Index k, const float* a, const float* bm, float* c) {
  const float one = 1, zero = 0;
  BENCH_CUBLAS(cublasSetStream(cublas(), stream));
  BENCH_CUBLAS(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, bm, int(n), a, int(k),
                           &zero, c, int(n)));
}
void cublas_gemm(cudaStream_t stream, Index m, Index n, Index k, const double* a, const double* bm, double* c) {
  const double one = 1, zero = 0;
  BENCH_CUBLAS(cublasSetStream(cublas(), stream));
  BENCH_CUBLAS(cublasDgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, bm, int(n), a, int(k),
                           &zero, c, int(n)));
}

/// Uniform values in [-1, 1) from a hash of the index (fresh per seed).
template <class T>
__global__ void fill_random_kernel(T* p, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    unsigned long long z = (static_cast<unsigned long long>(i) + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = static_cast<T>(static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

/// out[i] = double(in[i]), or |in[i]| when `fold` (data in [0, 1) from data in [-1, 1)).
template <class T>
__global__ void widen_kernel(const T* in, double* out, long long n) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x)
    out[i] = static_cast<double>(in[i]);
}
template <class T>
__global__ void fold_kernel(T* p, long long n) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) p[i] = p[i] < T(0) ? -p[i] : p[i];
}

template <class T>
struct Problem {
  Index m, n, k;
  std::vector<DeviceMatrix<T>> a, bm;  // rotating input sets
  DeviceMatrix<T> c;

  Problem(Index m_, Index n_, Index k_) : m(m_), n(n_), k(k_), c(m_, n_) {
    const double set_bytes = static_cast<double>(m * k + k * n) * sizeof(T);
    const int sets = static_cast<int>(std::clamp(std::ceil(100e6 / set_bytes), 1.0, 32.0));
    static unsigned long long seed = 12345;
    for (int s = 0; s < sets; ++s) {
      a.emplace_back(m, k);
      bm.emplace_back(k, n);
      fill(a.back(), ++seed);
      fill(bm.back(), ++seed);
    }
  }
  static void fill(DeviceMatrix<T>& x, unsigned long long seed) {
    const int blocks = static_cast<int>(std::min<long long>((x.size() + 255) / 256, 4096));
    fill_random_kernel<T><<<blocks, 256, 0, x.stream().native()>>>(x.data(), x.size(), seed * 0xD1B54A32D192ED03ull);
    DEVMAT_BENCH_CUDA(cudaGetLastError());
  }
  int sets() const { return static_cast<int>(a.size()); }
  cudaStream_t stream() const { return c.stream().native(); }
};

/// Aborts unless ||got - ref||_F <= 4 (k + 16) eps ||A||_F ||B||_F (both results carry up to
/// about k eps of normwise rounding error).
template <class T>
void check_against_cublas(const Problem<T>& p, const DeviceMatrix<T>& got, const DeviceMatrix<T>& ref,
                          const std::string& what) {
  const std::vector<T> g = got.to_vector(), r = ref.to_vector(), a = p.a[0].to_vector(), bm = p.bm[0].to_vector();
  double err = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < g.size(); ++i) err += (double(g[i]) - double(r[i])) * (double(g[i]) - double(r[i]));
  for (const T v : a) na += double(v) * double(v);
  for (const T v : bm) nb += double(v) * double(v);
  const double bound = 4.0 * (static_cast<double>(p.k) + 16) * std::numeric_limits<T>::epsilon() * std::sqrt(na * nb);
  if (!(std::sqrt(err) <= bound)) {
    std::fprintf(stderr, "bench_gemm: %s is WRONG: ||C - C_cublas||_F = %g > %g (||A||_F ||B||_F = %g)\n",
                 what.c_str(), std::sqrt(err), bound, std::sqrt(na * nb));
    std::exit(1);
  }
}

/// ||C - C64||_F / ||C64||_F for our product (configuration `config`, forced splits `splits`)
/// and for cuBLAS's, both of a (m x k) times b (k x n), C64 from cuBLAS DGEMM of the widened inputs.
struct ErrorPair {
  double ours, cublas;
};
ErrorPair errors_against_fp64(Index m, Index n, Index k, const DeviceMatrix<float>& a, const DeviceMatrix<float>& bm,
                              int config, int splits) {
  const cudaStream_t s = a.stream().native();
  DeviceMatrix<double> a64(m, k, a.stream()), b64(k, n, a.stream()), c64(m, n, a.stream());
  const auto widen = [&](const DeviceMatrix<float>& x, DeviceMatrix<double>& y) {
    const int blocks = static_cast<int>(std::min<long long>((x.size() + 255) / 256, 4096));
    widen_kernel<float><<<blocks, 256, 0, s>>>(x.data(), y.data(), x.size());
    DEVMAT_BENCH_CUDA(cudaGetLastError());
  };
  widen(a, a64);
  widen(bm, b64);
  cublas_gemm(s, m, n, k, a64.data(), b64.data(), c64.data());
  DeviceMatrix<float> ours(m, n, a.stream()), theirs(m, n, a.stream());
  devmat::detail::gemm_forced(config, splits, 1.0f, a, bm, 0.0f, ours);
  cublas_gemm(s, m, n, k, a.data(), bm.data(), theirs.data());
  const std::vector<double> r = c64.to_vector();
  const std::vector<float> o = ours.to_vector(), t = theirs.to_vector();
  double eo = 0, et = 0, nr = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    eo += (double(o[i]) - r[i]) * (double(o[i]) - r[i]);
    et += (double(t[i]) - r[i]) * (double(t[i]) - r[i]);
    nr += r[i] * r[i];
  }
  return {std::sqrt(eo / nr), std::sqrt(et / nr)};
}

/// Times batches of `op(i)` (one product on input set i) on `stream`; see the file comment.
template <class Op>
void time_batched(benchmark::State& state, cudaStream_t stream, double work_per_op, Op&& op) {
  cudaEvent_t start, stop;
  DEVMAT_BENCH_CUDA(cudaEventCreate(&start));
  DEVMAT_BENCH_CUDA(cudaEventCreate(&stop));
  constexpr double kHostSecondsPerOp = 20e-6;  // a generous bound on queueing one product
  auto run_batch = [&](int reps, long long first) {
    const double spin_s = std::min(reps * kHostSecondsPerOp + 20e-6, 20e-3);
    b::spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(spin_s * 1e9));
    DEVMAT_BENCH_CUDA(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) op(first + r);
    DEVMAT_BENCH_CUDA(cudaEventRecord(stop, stream));
    DEVMAT_BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    DEVMAT_BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3;
  };
  run_batch(2, 0);  // warm-up
  const double one = run_batch(4, 2) / 4;
  const int reps = static_cast<int>(std::clamp(std::ceil(300e-6 / std::max(one, 1e-7)), 1.0, 256.0));
  double total_s = 0;
  long long next = 6, ops = 0;
  for (auto _ : state) {
    const double s = run_batch(reps, next);
    next += reps, ops += reps;
    state.SetIterationTime(s);
    total_s += s;
  }
  DEVMAT_BENCH_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  state.counters["value"] = work_per_op * static_cast<double>(ops) / total_s / 1e12;
  state.counters["unit"] = b::kTflops;
  state.counters["reps"] = reps;
}

template <class T>
void bench_ours(benchmark::State& state, Index m, Index n, Index k, int config, int splits) {
  Problem<T> p(m, n, k);
  DeviceMatrix<T> ref(m, n), got(m, n);
  cublas_gemm(p.stream(), m, n, k, p.a[0].data(), p.bm[0].data(), ref.data());
  devmat::detail::gemm_forced(config, splits, T(1), p.a[0], p.bm[0], T(0), got);
  const std::string what = std::string("ours") + (config < 0 ? "" : "-" + devmat::detail::gemm_configs<T>()[config].name) +
                           (splits > 0 ? "-s" + std::to_string(splits) : "");
  check_against_cublas(p, got, ref, what + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
  time_batched(state, p.stream(), 2.0 * m * n * k, [&](long long i) {
    const int s = static_cast<int>(i % p.sets());
    devmat::detail::gemm_forced(config, splits, T(1), p.a[s], p.bm[s], T(0), p.c);
  });
  state.SetLabel(config < 0 ? devmat::detail::gemm_plan<T>(m, n, k) : "forced");
  if constexpr (std::is_same_v<T, float>) {
    const ErrorPair signed_data = errors_against_fp64(m, n, k, p.a[0], p.bm[0], config, splits);
    for (DeviceMatrix<T>* x : {&p.a[0], &p.bm[0]}) {
      const int blocks = static_cast<int>(std::min<long long>((x->size() + 255) / 256, 4096));
      fold_kernel<T><<<blocks, 256, 0, p.stream()>>>(x->data(), x->size());
      DEVMAT_BENCH_CUDA(cudaGetLastError());
    }
    const ErrorPair positive = errors_against_fp64(m, n, k, p.a[0], p.bm[0], config, splits);
    state.counters["err"] = signed_data.ours;
    state.counters["err_cublas"] = signed_data.cublas;
    state.counters["err_pos"] = positive.ours;
    state.counters["err_pos_cublas"] = positive.cublas;
  }
}

/// gemm with one GEMV kernel variant forced (the choice is restored after).
template <class T>
void bench_gemv(benchmark::State& state, Index m, Index n, Index k, devmat::detail::GemvCols how) {
  devmat::detail::gemv_cols_force(how);
  bench_ours<T>(state, m, n, k, -1, 0);
  devmat::detail::gemv_cols_force(devmat::detail::GemvCols::automatic);
}

/// gemm with FloatMath::simt for the whole run (the setting is restored after).
void bench_simt(benchmark::State& state, Index m, Index n, Index k) {
  const devmat::FloatMath saved = devmat::float_math();
  devmat::set_float_math(devmat::FloatMath::simt);
  bench_ours<float>(state, m, n, k, -1, 0);
  devmat::set_float_math(saved);
}

template <class T>
void bench_cublas(benchmark::State& state, Index m, Index n, Index k) {
  Problem<T> p(m, n, k);
  time_batched(state, p.stream(), 2.0 * m * n * k, [&](long long i) {
    const int s = static_cast<int>(i % p.sets());
    cublas_gemm(p.stream(), m, n, k, p.a[s].data(), p.bm[s].data(), p.c.data());
  });
}

template <class T>
void register_shape(Index m, Index n, Index k, bool every_config, std::vector<int> split_sweep = {}) {
  const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  auto add = [&](const std::string& impl, auto fn) {
    benchmark::RegisterBenchmark(b::name("gemm", dtype<T>(), shape, impl).c_str(), fn)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  add("ours", [=](benchmark::State& st) { bench_ours<T>(st, m, n, k, -1, 0); });
  add("cublas", [=](benchmark::State& st) { bench_cublas<T>(st, m, n, k); });
  if constexpr (std::is_same_v<T, float>) add("ours-simt", [=](benchmark::State& st) { bench_simt(st, m, n, k); });
  if (m == 1) {
    using G = devmat::detail::GemvCols;
    const std::pair<const char*, G> variants[] = {{"split", G::split}, {"narrow", G::narrow}};
    for (const auto& v : variants) {
      const G how = v.second;
      add(std::string("ours-gemv-") + v.first, [=](benchmark::State& st) { bench_gemv<T>(st, m, n, k, how); });
    }
  }
  if (!every_config) return;
  const auto configs = devmat::detail::gemm_configs<T>();
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    add("ours-" + configs[i].name, [=](benchmark::State& st) { bench_ours<T>(st, m, n, k, i, 0); });
    // Fixed k-slice counts, to calibrate the cost model's choice (float: the tensor-core
    // configurations, which the default mode picks from).
    if (std::is_same_v<T, float> && configs[i].math != devmat::detail::GemmMath::tf32x3) continue;
    for (int s : split_sweep)
      add("ours-" + configs[i].name + "-s" + std::to_string(s),
          [=](benchmark::State& st) { bench_ours<T>(st, m, n, k, i, s); });
  }
}
/// One forced configuration's row (ours-<name>) on a shape that does not run every configuration;
/// with `splits`, one row per k-slice count instead (ours-<name>-s<count>).
template <class T>
void register_config(Index m, Index n, Index k, const std::string& name, std::vector<int> splits = {0}) {
  const auto configs = devmat::detail::gemm_configs<T>();
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    if (configs[i].name != name) continue;
    const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    for (int s : splits) {
      const std::string impl = "ours-" + name + (s > 0 ? "-s" + std::to_string(s) : "");
      benchmark::RegisterBenchmark(b::name("gemm", dtype<T>(), shape, impl).c_str(),
                                   [=](benchmark::State& st) { bench_ours<T>(st, m, n, k, i, s); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  for (Index s : {512, 1024, 2048, 4096, 8192}) register_shape<float>(s, s, s, s == 4096);
  // The Hopper wgmma tile (automatic on sm_90) and the mma.sync tile it replaced, forced, on
  // the other cubes as well; 4096^3 and the odd shapes below run every configuration.
  for (Index s : {512, 1024, 2048, 8192}) {
    register_config<float>(s, s, s, "wgmma-128x128x32");
    register_config<float>(s, s, s, "tf32x3f-128x128x32");
  }
  // The odd shapes, MxNxK.
  register_shape<float>(47, 804, 53, true);
  register_shape<float>(47, 53, 804, true);  // the residual-tile regression shape, A 47x804 * B 804x53
  register_shape<float>(1000, 1000, 1000, true, {1, 2, 4});
  register_shape<float>(4097, 4097, 4097, true);
  register_shape<float>(8192, 8192, 64, true);
  register_shape<float>(64, 8192, 8192, true, {1, 2, 4, 8, 16});
  register_shape<float>(1, 4096, 4096, true);
  // Issue 13's shape classes, written there as m k n, here MxNxK: 128 4096 128 (short k-long),
  // 777^3, 65536 64 64 (tall, k = 64), 5003 4001 3007 (odd), a small cube, k >= 10^5.
  register_shape<float>(128, 128, 4096, true);
  register_shape<float>(777, 777, 777, true);
  register_shape<float>(65536, 64, 64, true);
  register_shape<float>(5003, 3007, 4001, true);
  register_shape<float>(256, 256, 256, false);
  register_shape<float>(256, 256, 131072, true);
  // Short k over few output tiles (session 35: 0.63-0.75 of cuBLAS before the short-k tile):
  // a few hundred rows and columns, short-wide, and a latency-bound cube.
  register_shape<float>(384, 256, 128, false);
  register_shape<float>(64, 2048, 128, false);
  register_shape<float>(128, 128, 128, false);
  // Narrow products (session 36): n <= 16 (tall) and m <= 16 (short-wide), memory-bound on the
  // long operand; the narrow CUDA-core tiles beside the 32x32 short-k tile they took over from.
  register_shape<float>(65536, 16, 128, false);
  register_shape<float>(16, 65536, 128, false);
  register_shape<float>(16, 512, 2048, false);
  for (const auto& s : {std::array<Index, 3>{65536, 16, 128}, std::array<Index, 3>{16, 65536, 128}})
    register_config<float>(s[0], s[1], s[2], "tf32x3-32x32x32", {1});
  // Issue 13, cluster split-K (the "-cl" wgmma tiles sum their k slices in the kernel): fixed
  // slice counts beside their base tiles' workspace-and-finalize path, on the latency-bound and
  // the wave-quantised shapes (every configuration's model-chosen row is registered above).
  for (const char* name : {"wgmma-128x128x32", "wgmma-128x128x32-cl"}) {
    register_config<float>(777, 777, 777, name, {2, 3});
    register_config<float>(128, 128, 4096, name, {8});
  }
  for (const char* name : {"wgmma-64x128x32", "wgmma-64x128x32-cl"}) register_config<float>(777, 777, 777, name, {2});
  // 47x53x804, one output tile: slices of 4, 3, 2 and 1 k tiles on the SIMT 64x64 tile and of 2
  // and 1 on the 3xTF32 one (the cost model's latency-bound rule, gemm_min_split_k). The
  // cluster-summed wgmma tiles ran 0.29-0.64 of cuBLAS there at 2, 4 and 8 slices (session 10).
  register_config<float>(47, 53, 804, "64x64x16", {13, 17, 26, 51});
  // 256^3 (issue 13's small cube: 0.84-0.87 of cuBLAS on 64x64x16 at 4 slices, the plan until
  // session 34; 8 slices since): the small tiles and the cluster-summed wgmma tiles at other slice
  // counts.
  register_config<float>(256, 256, 256, "64x64x16", {1, 2, 4, 16});
  register_config<float>(256, 256, 256, "tf32x3-64x64x32", {1, 2, 4, 8});
  for (const char* name : {"wgmma-128x128x32-cl", "wgmma-64x128x32-cl"}) register_config<float>(256, 256, 256, name, {2, 4, 8});
  register_config<float>(47, 53, 804, "tf32x3-64x64x32", {13, 26});
  // double: every configuration at every size (the pipelined DMMA tiles are calibrated from these).
  for (Index s : {1024, 2048, 4096, 8192}) register_shape<double>(s, s, s, true);
  register_shape<double>(1000, 1000, 1000, true, {1, 2, 3, 4});  // the split counts: issue 13's smallest DGEMM
  // Issue 13: the cluster-summed DMMA tiles at 2 and 4 slices at 1024^3 (their s=1 row, the
  // ours-<name> row at 8192^3, runs the tail split; their base tiles' rows have none).
  for (const char* name : {"pipe-128x128x16-k4-w16-cl", "pipe-128x128x32-k4-w16-cl"})
    register_config<double>(1024, 1024, 1024, name, {2, 4});
  // Issue 13, DGEMM 1000^3 against 1024^3 (session 32, H200: pipe-64x64x16-k8 0.89 and 0.97 of
  // cuBLAS, the 32-deep cluster tile 0.90 and 0.92): one dimension at a time, to tell the ragged
  // m (edge blocks of A's rows), n (of B's columns) and k (the last k tile) apart.
  for (const auto& s : {std::array<Index, 3>{1000, 1024, 1024}, std::array<Index, 3>{1024, 1000, 1024},
                        std::array<Index, 3>{1024, 1024, 1000}}) {
    register_shape<double>(s[0], s[1], s[2], false);
    register_config<double>(s[0], s[1], s[2], "pipe-64x64x16-k8");
    register_config<double>(s[0], s[1], s[2], "pipe-128x128x32-k4-w16-cl", {2});
  }
  // Float products from the environment, for shapes that are in no file of the project and the
  // cost model's picks on them: DEVMAT_BENCH_GEMM_SHAPES="300x200x100,128x128x512:64x64x16:16"
  // (MxNxK: ours, cuBLAS and ours-simt, once a shape; ":config:slices" adds that configuration
  // forced at that many k slices). An item that does not parse, or names no configuration, is
  // skipped with a note on stderr.
  if (const char* extra = std::getenv("DEVMAT_BENCH_GEMM_SHAPES")) {
    const auto positive = [](const std::string& text, long long& value) {
      char* end = nullptr;
      value = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
      return !text.empty() && end == text.c_str() + text.size() && value > 0;
    };
    const auto configs = devmat::detail::gemm_configs<float>();
    std::istringstream list(extra);
    std::string item;
    std::set<std::string> shapes;
    while (std::getline(list, item, ',')) {
      std::istringstream parts(item);
      std::string dims, config, slices, v;
      std::getline(parts, dims, ':');
      std::getline(parts, config, ':');
      std::getline(parts, slices, ':');
      long long mnk[3] = {0, 0, 0}, s = 0;
      std::istringstream d(dims);
      bool ok = true;
      for (long long& x : mnk) ok = ok && std::getline(d, v, 'x') && positive(v, x);
      ok = ok && !std::getline(d, v, 'x');  // no fourth dimension
      if (ok && !config.empty()) {
        ok = positive(slices, s) && std::any_of(configs.begin(), configs.end(), [&](const auto& c) { return c.name == config; });
      }
      if (!ok) {
        std::fprintf(stderr, "DEVMAT_BENCH_GEMM_SHAPES: skipped \"%s\" (MxNxK[:config:slices])\n", item.c_str());
        continue;
      }
      if (shapes.insert(dims).second) register_shape<float>(mnk[0], mnk[1], mnk[2], false);
      if (!config.empty()) register_config<float>(mnk[0], mnk[1], mnk[2], config, {static_cast<int>(s)});
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
