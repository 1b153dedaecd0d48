// Fused expressions: devmat evaluating a formula as one expression beside a hand-written CUDA
// kernel of the same formula ("fused-kernel"), and a fused reduction beside cub's
// TransformReduce, in the same run. Also prints what a first evaluation costs (code generation
// and NVRTC), the host time a cached evaluation adds to a bare launch stage by stage, and the
// event-timed cost of one evaluation on an idle stream (host and device) and behind a busy one
// (device only).
#include "queued.cuh"
#include "support.hpp"

#include "expr/engine.hpp"
#include "expr/plan.hpp"
#include "expr/program.hpp"

#include <devmat/devmat.hpp>

#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/tuple.h>

#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;

// ------------------------------------------------------------------ hand-written references
// Four floats per thread through 16-byte loads, one element per thread for the tail.
template <class F>
__global__ void map3_kernel(float* __restrict__ out, const float* __restrict__ a, const float* __restrict__ b_,
                            const float* __restrict__ c, Index n, F f) {
  const Index i = (static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 3 < n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i), y = *reinterpret_cast<const float4*>(b_ + i),
                 z = *reinterpret_cast<const float4*>(c + i);
    *reinterpret_cast<float4*>(out + i) = make_float4(f(x.x, y.x, z.x), f(x.y, y.y, z.y), f(x.z, y.z, z.z), f(x.w, y.w, z.w));
  } else {
    for (Index k = i; k < n; ++k) out[k] = f(a[k], b_[k], c[k]);
  }
}

struct E1 {  // (2a + b)/2 - |c|
  __device__ float operator()(float a, float b_, float c) const {
    return __fsub_rn(__fdiv_rn(__fadd_rn(__fmul_rn(2.f, a), b_), 2.f), fabsf(c));
  }
};
struct AddSub {  // a + b - c
  __device__ float operator()(float a, float b_, float c) const { return __fsub_rn(__fadd_rn(a, b_), c); }
};
struct GradMag {  // sqrt(a^2 + b^2)
  __device__ float operator()(float a, float b_, float) const {
    return __fsqrt_rn(__fadd_rn(__fmul_rn(a, a), __fmul_rn(b_, b_)));
  }
};

template <class F>
__global__ void map2_kernel(float* __restrict__ out, const float* __restrict__ a, const float* __restrict__ b_, Index n,
                            F f) {
  const Index i = (static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 3 < n) {
    const float4 x = *reinterpret_cast<const float4*>(a + i), y = *reinterpret_cast<const float4*>(b_ + i);
    *reinterpret_cast<float4*>(out + i) = make_float4(f(x.x, y.x, 0.f), f(x.y, y.y, 0.f), f(x.z, y.z, 0.f), f(x.w, y.w, 0.f));
  } else {
    for (Index k = i; k < n; ++k) out[k] = f(a[k], b_[k], 0.f);
  }
}

/// The formula over n elements: three inputs, or two when c is null.
template <class F>
void launch_map3(cudaStream_t s, float* out, const float* a, const float* b_, const float* c, Index n, F f) {
  const Index threads = (n + 3) / 4;
  const auto blocks = static_cast<unsigned>((threads + 255) / 256);
  if (c) map3_kernel<<<blocks, 256, 0, s>>>(out, a, b_, c, n, f);
  else map2_kernel<<<blocks, 256, 0, s>>>(out, a, b_, n, f);
}

// ------------------------------------------------------------------ element-wise formulas
template <class Ours, class F>
void register_formula(const char* op, Index rows, Index cols, int n_in, Ours ours, F f) {
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  const double bytes = (n_in + 1.0) * static_cast<double>(rows * cols) * sizeof(float);
  benchmark::RegisterBenchmark(b::name(op, "f32", shape, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 1);
    const auto B = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 2);
    const auto C = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
    DeviceMatrix<float> R(rows, cols);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { ours(R, A, B, C); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name(op, "f32", shape, "fused-kernel").c_str(), [=](benchmark::State& st) {
    const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 1);
    const auto B = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 2);
    const auto C = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
    DeviceMatrix<float> R(rows, cols);
    const cudaStream_t s = A.stream().native();
    const float* c = n_in == 3 ? C.data() : nullptr;
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { launch_map3(s, R.data(), A.data(), B.data(), c, rows * cols, f); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  // The same formula one operator at a time (what devmat did before expressions).
  benchmark::RegisterBenchmark(b::name(op, "f32", shape, "ours-unfused").c_str(), [=](benchmark::State& st) {
    const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 1);
    const auto B = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 2);
    const auto C = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
    DeviceMatrix<float> R(rows, cols);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { ours(R, A, B, C, true); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ fused reduction
struct SqDiff {
  __device__ float operator()(const thrust::tuple<float, float>& t) const {
    const float d = __fsub_rn(thrust::get<0>(t), thrust::get<1>(t));
    return __fmul_rn(d, d);
  }
};

void register_sqdiff_sum(Index n) {
  const std::string size = std::to_string(n);
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  benchmark::RegisterBenchmark(b::name("expr-sqdiff-sum", "f32", size, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = DeviceMatrix<float>::random_uniform(n / 4096, 4096, -1.f, 1.f, 1);
    const auto B = DeviceMatrix<float>::random_uniform(n / 4096, 4096, -1.f, 1.f, 2);
    DeviceMatrix<float> s;
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { s = square(A - B).sum_async(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("expr-sqdiff-sum", "f32", size, "cub").c_str(), [=](benchmark::State& st) {
    const auto A = DeviceMatrix<float>::random_uniform(n / 4096, 4096, -1.f, 1.f, 1);
    const auto B = DeviceMatrix<float>::random_uniform(n / 4096, 4096, -1.f, 1.f, 2);
    const cudaStream_t s = A.stream().native();
    float* out;
    DEVMAT_BENCH_CUDA(cudaMalloc(&out, sizeof(float)));
    auto in = thrust::make_zip_iterator(thrust::make_tuple(A.data(), B.data()));
    std::size_t temp_bytes = 0;
    cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, in, out, n, cuda::std::plus<float>(), SqDiff(), 0.f, s);
    void* temp;
    DEVMAT_BENCH_CUDA(cudaMalloc(&temp, temp_bytes));
    b::time_on_stream(st, s, bytes, b::kGBps, [&] {
      cub::DeviceReduce::TransformReduce(temp, temp_bytes, in, out, n, cuda::std::plus<float>(), SqDiff(), 0.f, s);
    });
    cudaStreamSynchronize(s);
    cudaFree(temp);
    cudaFree(out);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ a chain of 10, launch-bound
__global__ void add_kernel(float* out, const float* a, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + x[i];
}

constexpr int kChainN = 256;

/// Ten operators, one expression: min(sqrt(square(|(A + B) * 0.5 - A|) + 1) * A - B, 4) ...
template <class M>
auto chain10(const M& A, const M& B) {
  return min(cwise_product(sqrt(square(abs((A + B) * 0.5f - A)) + 1.0f), A) - B, 4.0f);
}

void register_chain() {
  const std::string shape = std::to_string(kChainN) + "x" + std::to_string(kChainN);
  // Evaluations per second (Mop/s): one expression of 10 operators against one bare launch. Each
  // iteration is timed by events from an idle stream (time_on_stream): the host time from the
  // start event to the launch (building the tree, lowering, planning, the launch call) counts,
  // and then the kernel; R is written in place (no allocation). Variants: ours-prebuilt
  // evaluates a tree built once (R = e: no building, no dropping); ours-v4 / v2 / v1 run a
  // small-matrix kernel with only the one-unit loop, on 4- / 2- / 1-float units (64 / 128 / 256
  // blocks; the default kernel also holds the four-unit loop of large matrices, on 4 floats).
  // ours-runtime-launch: launched by cudaLaunchKernel of the cudaKernel_t, as before the driver's
  // cuLaunchKernel became the default (set_expr_driver_launch).
  const auto ours = [&](const char* impl, int small_vector, bool prebuilt, bool driver_launch = true) {
    benchmark::RegisterBenchmark(b::name("expr-chain10", "f32", shape, impl).c_str(),
                                 [=](benchmark::State& st) {
      const devmat::Stream s = devmat::Stream::create();
      const auto A = DeviceMatrix<float>::constant(kChainN, kChainN, 1.f, s);
      const auto B = DeviceMatrix<float>::constant(kChainN, kChainN, 2.f, s);
      DeviceMatrix<float> R(kChainN, kChainN, s);
      devmat::detail::set_expr_small_vector(small_vector);
      devmat::detail::set_expr_driver_launch(driver_launch);
      if (prebuilt) {
        const auto e = chain10(A, B);
        b::time_on_stream(st, s.native(), 1, b::kMops, [&] { R = e; });
      } else {
        b::time_on_stream(st, s.native(), 1, b::kMops, [&] { R = chain10(A, B); });
      }
      devmat::detail::set_expr_driver_launch(true);
      devmat::detail::set_expr_small_vector(0);
    })->UseManualTime()->Unit(benchmark::kMicrosecond);
  };
  ours("ours", 0, false);
  benchmark::RegisterBenchmark(b::name("expr-chain10", "f32", shape, "launch-only").c_str(), [](benchmark::State& st) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    const int n = kChainN * kChainN;
    float *a, *x;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&x, n * sizeof(float));
    cudaMemset(a, 0, n * sizeof(float));
    b::time_on_stream(st, s, 1, b::kMops, [&] { add_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, a, a, n); });
    cudaStreamSynchronize(s);
    cudaFree(a);
    cudaFree(x);
    cudaStreamDestroy(s);
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  ours("ours-prebuilt", 0, true);
  ours("ours-v4", 4, false);
  ours("ours-v2", 2, false);
  ours("ours-v1", 1, false);
  ours("ours-runtime-launch", 0, false, false);
}

// ------------------------------------------------------------------ compile and host costs
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Start to end of one call by events, over 2000 calls (one untimed first), in microseconds:
/// the median, the mean (what time_on_stream's rows report) and the 90th percentile.
struct EventStats {
  double median, mean, p90;
};

/// idle: each call starts on an idle stream, as time_on_stream times it: the host time from the
/// start event to the launch counts, then the device's. busy: each call is queued behind a spin
/// kernel that outlasts the host's work, so only the device time of what the call queued counts
/// (its kernel, and the gap before it).
template <class Op>
EventStats event_stats(cudaStream_t s, Op op, bool busy = false) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  op();  // a first call compiles what it needs
  cudaStreamSynchronize(s);
  std::vector<double> us(2000);
  for (double& u : us) {
    if (busy) b::spin_kernel<<<1, 1, 0, s>>>(50000);  // 50 us
    cudaEventRecord(e0, s);
    op();
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    u = ms * 1e3;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const double mean = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], mean, us[us.size() * 9 / 10]};
}

template <class Op>
double event_us(cudaStream_t s, Op op) {
  return event_stats(s, op).median;
}

void print_stats(const char* what, const EventStats& e) {
  std::printf("  %-44s median %6.2f  mean %6.2f  p90 %6.2f us\n", what, e.median, e.mean, e.p90);
}

/// What one launch costs the host through each way of launching: `<<<>>>`, cudaLaunchKernel of
/// a cudaKernel_t from a library loaded at run time (how the engine launches), and the driver's
/// cuLaunchKernel of that kernel's CUfunction in the current context. Prints nothing where a
/// step fails (a probe, not a benchmark).
template <class HostUs>
void report_launch_paths(HostUs host_us, cudaStream_t s, float* x, const float* a, int n) {
  const char* src = "extern \"C\" __global__ void k(float* x, const float* a, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = a[i] + a[i]; }\n";
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src, "probe.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return;
  const char* opts[] = {"-arch=sm_90"};
  std::string image;
  if (nvrtcCompileProgram(prog, 1, opts) == NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    image.resize(size);
    nvrtcGetCUBIN(prog, image.data());
  }
  nvrtcDestroyProgram(&prog);
  cudaLibrary_t lib;
  cudaKernel_t k;
  if (image.empty() || cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) != cudaSuccess ||
      cudaLibraryGetKernel(&k, lib, "k") != cudaSuccess)
    return;
  const dim3 grid((n + 255) / 256), block(256);
  void* args[] = {&x, &a, &n};
  const double lib_us = host_us([&] { cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, 0, s); });
  using GetFunction = CUresult (*)(CUfunction*, CUkernel);
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  void* get_fn = nullptr;
  void* launch_fn = nullptr;
  cudaDriverEntryPointQueryResult q1, q2;
  CUfunction f = nullptr;
  double drv_us = -1;
  if (cudaGetDriverEntryPointByVersion("cuKernelGetFunction", &get_fn, 12000, cudaEnableDefault, &q1) == cudaSuccess &&
      cudaGetDriverEntryPointByVersion("cuLaunchKernel", &launch_fn, 12000, cudaEnableDefault, &q2) == cudaSuccess &&
      get_fn && launch_fn && reinterpret_cast<GetFunction>(get_fn)(&f, reinterpret_cast<CUkernel>(k)) == CUDA_SUCCESS) {
    const auto launch = reinterpret_cast<Launch>(launch_fn);
    drv_us = host_us([&] { launch(f, grid.x, 1, 1, 256, 1, 1, 0, s, args, nullptr); });
  }
  const double peek_us = host_us([&] {
    for (int i = 0; i < 100; ++i) (void)cudaPeekAtLastError();
  }) / 100;
  const double dev_us = host_us([&] {
    int d;
    for (int i = 0; i < 100; ++i) (void)cudaGetDevice(&d);
  }) / 100;
  const double lib_ev = event_us(s, [&] { cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, 0, s); });
  const double bare_ev = event_us(s, [&] { add_kernel<<<grid, block, 0, s>>>(x, a, a, n); });
  cudaStreamSynchronize(s);
  std::printf("launch paths, host us: cudaLaunchKernel(library kernel) %.2f, cuLaunchKernel(CUfunction) %.2f; "
              "cudaPeekAtLastError %.3f, cudaGetDevice %.3f\n", lib_us, drv_us, peek_us, dev_us);
  std::printf("launch paths, event-timed us: <<<>>> %.2f, library kernel %.2f\n", bare_ev, lib_ev);
}

/// chain10 (the expr-chain10 rows) stage by stage: host time of each step of an evaluation (with
/// the driver's launch and with the runtime's), and event-timed figures of the evaluation and of
/// a bare launch, on an idle stream (host and device time, as the rows are timed) and behind a busy
/// one (device time only), with the small-matrix kernel on 4-, 2- and 1-float units.
template <class HostUs>
void report_chain10_stages(HostUs host_us, const DeviceMatrix<float>& A, const DeviceMatrix<float>& B,
                           DeviceMatrix<float>& R) {
  namespace d = devmat::detail;
  const devmat::Stream stream = R.stream();
  const cudaStream_t s = stream.native();
  const int n = kChainN * kChainN;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const auto e = chain10(A, B);  // built once
  d::Program p;
  d::lower_into(*e.node(), p);
  for (int v : {0, 4, 2, 1}) {
    const d::Plan plan = d::plan_elementwise(p, R.data(), R.cols(), sms, v);
    std::printf("expr chain10 plan (small vector %d): %s, %u blocks of %u threads, %d unit(s) a thread of %d "
                "floats, %zu leaves, %zu scalars, %zu ops\n", v,
                plan.spec.kind == d::KernelKind::elementwise_flat ? "flat" : "2d", plan.shape.gx, plan.shape.bx,
                plan.head.units, plan.spec.vector ? plan.spec.vector : d::elementwise_vector(p), p.leaves.size(),
                p.scalars.size(), p.ops.size());
  }
  const d::Plan plan = d::plan_elementwise(p, R.data(), R.cols(), sms);
  float* out = R.data();
  const float* a = A.data();
  const double build_us = host_us([&] {
    const auto built = chain10(A, B);
    benchmark::DoNotOptimize(built.node().get());
  });
  const double lower_us = host_us([&] { d::lower_into(*e.node(), p); });
  const double plan_us = host_us([&] {
    for (int i = 0; i < 100; ++i) benchmark::DoNotOptimize(d::plan_elementwise(p, R.data(), R.cols(), sms));
  }) / 100;
  const double bare_us = host_us([&] { add_kernel<<<(n + 255) / 256, 256, 0, s>>>(out, a, a, n); });
  // Each launch of the engine: the driver's cuLaunchKernel (the default), the runtime's
  // cudaLaunchKernel of the cudaKernel_t (before).
  for (bool driver : {true, false}) {
    const bool active = d::set_expr_driver_launch(driver);
    const double full_us = host_us([&] { R = chain10(A, B); });
    const double eval_us = host_us([&] { R = e; });
    const double run_us = host_us([&] { d::run_elementwise(p, R.data(), R.cols(), stream); });
    std::printf("expr chain10 host us (median of single calls), %s launch%s: R = chain10(A, B) %.2f; R = e (tree "
                "built once) %.2f = lowering %.2f + run_elementwise %.2f (plan %.3f, kernel lookup, parameters, "
                "launch) + the rest %.2f (entry, device guard, stream order, aliasing); the tree built and dropped "
                "%.2f; bare <<<>>> launch %.2f; %u blocks\n",
                driver ? "driver" : "runtime", driver && !active ? " (not available: runtime)" : "", full_us, eval_us,
                lower_us, run_us, plan_us, eval_us - lower_us - run_us, build_us, bare_us, plan.shape.gx);
  }
  d::set_expr_driver_launch(true);
  std::printf("expr chain10 event-timed, idle stream (host until the launch, then the device):\n");
  const EventStats ours = event_stats(s, [&] { R = chain10(A, B); });
  const EventStats bare = event_stats(s, [&] { add_kernel<<<(n + 255) / 256, 256, 0, s>>>(out, a, a, n); });
  print_stats("R = chain10(A, B)", ours);
  print_stats("R = e (tree built once)", event_stats(s, [&] { R = e; }));
  print_stats("R = A + B", event_stats(s, [&] { R = A + B; }));
  print_stats("bare <<<>>> add, 256 blocks (launch-only)", bare);
  const auto narrow = [&](int v, bool busy) {
    d::set_expr_small_vector(v);
    const EventStats r = event_stats(s, [&] { R = chain10(A, B); }, busy);
    d::set_expr_small_vector(0);
    return r;
  };
  d::set_expr_driver_launch(false);
  const EventStats runtime_launch = event_stats(s, [&] { R = chain10(A, B); });
  d::set_expr_driver_launch(true);
  print_stats("R = chain10(A, B), runtime launch (before)", runtime_launch);
  const EventStats v4 = narrow(4, false), v2 = narrow(2, false), v1 = narrow(1, false);
  print_stats("R = chain10(A, B), one-unit kernel, 4 floats", v4);
  print_stats("R = chain10(A, B), one-unit kernel, 2 floats", v2);
  print_stats("R = chain10(A, B), one-unit kernel, 1 float", v1);
  std::printf("  ratio of means, bare / chain10 (the row's ratio, target >= 0.833): default %.3f, runtime launch "
              "%.3f, one-unit kernel on 4 floats %.3f, 2 floats %.3f, 1 float %.3f\n",
              bare.mean / ours.mean, bare.mean / runtime_launch.mean, bare.mean / v4.mean, bare.mean / v2.mean,
              bare.mean / v1.mean);
  std::printf("expr chain10 event-timed, behind a spin kernel (device time only):\n");
  print_stats("R = chain10(A, B)", event_stats(s, [&] { R = chain10(A, B); }, true));
  d::set_expr_driver_launch(false);
  print_stats("R = chain10(A, B), runtime launch (before)", event_stats(s, [&] { R = chain10(A, B); }, true));
  d::set_expr_driver_launch(true);
  print_stats("R = chain10(A, B), one-unit kernel, 4 floats", narrow(4, true));
  print_stats("R = chain10(A, B), one-unit kernel, 2 floats", narrow(2, true));
  print_stats("R = chain10(A, B), one-unit kernel, 1 float", narrow(1, true));
  print_stats("R = A + B", event_stats(s, [&] { R = A + B; }, true));
  print_stats("bare <<<>>> add, 256 blocks", event_stats(s, [&] { add_kernel<<<(n + 255) / 256, 256, 0, s>>>(out, a, a, n); }, true));
}

/// First evaluations of expressions this process has not seen (the disk cache may still hold
/// them: DEVMAT_CACHE_DIR=off measures NVRTC), and the host time of cached evaluations.
void report_costs() {
  const auto A = DeviceMatrix<float>::constant(256, 256, 1.f), B = DeviceMatrix<float>::constant(256, 256, 2.f),
             C = DeviceMatrix<float>::constant(256, 256, 3.f);
  DeviceMatrix<float> R(256, 256);
  R.synchronize();
  // DEVMAT_EXPR_TRACE=1 adds where each kernel's build time went (codegen, NVRTC, module load).
  const auto first = [](const char* what, DeviceMatrix<float>& out, auto make) {
    const auto t0 = std::chrono::steady_clock::now();
    out = make();
    out.synchronize();
    std::printf("expr first evaluation: %-48s %8.1f ms\n", what, ms_since(t0));
  };
  const auto formulas = [&](const char* size, const DeviceMatrix<float>& a, const DeviceMatrix<float>& b,
                            const DeviceMatrix<float>& c, DeviceMatrix<float>& r) {
    const std::string tag = std::string(" ") + size;
    first(("(2*A + B)/2 - abs(C)" + tag).c_str(), r, [&] { return (2.f * a + b) / 2.f - abs(c); });
    first(("A + B - C" + tag).c_str(), r, [&] { return a + b - c; });
    first(("sqrt(square(A) + square(B))" + tag).c_str(), r, [&] { return sqrt(square(a) + square(b)); });
    first(("chain10" + tag).c_str(), r, [&] { return chain10(a, b); });
    first(("exp(-square(A))*log1p(abs(B))+tanh(C)" + tag).c_str(), r,
          [&] { return cwise_product(exp(-square(a)), log1p(abs(b))) + tanh(c); });
  };
  formulas("256x256", A, B, C, R);  // the small-matrix kernels (one vector a thread)
  {
    // The large-matrix kernels of the same formulas (several vectors a thread): each a kernel
    // of its own, compiled on its first use (but the exp/log1p/tanh one, whose kernel is the
    // same at every size: its line is a cached evaluation).
    const auto A4 = DeviceMatrix<float>::constant(4096, 4096, 1.f), B4 = DeviceMatrix<float>::constant(4096, 4096, 2.f),
               C4 = DeviceMatrix<float>::constant(4096, 4096, 3.f);
    DeviceMatrix<float> R4(4096, 4096);
    R4.synchronize();
    formulas("4096x4096", A4, B4, C4, R4);
  }
  // Host time per cached evaluation (build + lower + lookup + launch), beside a bare launch: the
  // median of single calls, each made on an idle stream (calls back to back would fill the
  // launch queue, and then time the device).
  const cudaStream_t s = A.stream().native();
  const auto host_us = [&](auto op) {
    std::vector<double> us(2000);
    for (double& u : us) {
      cudaStreamSynchronize(s);
      const auto t0 = std::chrono::steady_clock::now();
      op();
      u = ms_since(t0) * 1e3;
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    return us[us.size() / 2];
  };
  const double ours_us = host_us([&] { R = (2.f * A + B) / 2.f - abs(C); });
  const double chain_us = host_us([&] { R = chain10(A, B); });
  const double bare_us =
      host_us([&] { launch_map3(s, R.data(), A.data(), B.data(), C.data(), 256 * 256, E1{}); });
  cudaStreamSynchronize(s);
  std::printf("expr host time per cached evaluation: %.2f us; bare <<<>>> launch %.2f us; added %.2f us\n", ours_us,
              bare_us, ours_us - bare_us);
  std::printf("expr host time per cached evaluation: chain10 %.2f us; added %.2f us\n", chain_us, chain_us - bare_us);
  // Where chain10's added time goes: building its tree (and freeing it), and the rest.
  const double build_us = host_us([&] { const auto e = chain10(A, B); (void)e; });
  const double add_us = host_us([&] { R = A + B; });
  std::printf("expr host time: chain10 tree built and dropped %.2f us; R = A + B %.2f us\n", build_us, add_us);
  report_launch_paths(host_us, s, R.data(), A.data(), 256 * 256);
  std::printf("expr event-timed us: R = chain10 %.2f, R = A + B %.2f\n", event_us(s, [&] { R = chain10(A, B); }),
              event_us(s, [&] { R = A + B; }));
  report_chain10_stages(host_us, A, B, R);
}
}  // namespace

int main(int argc, char** argv) {
  report_costs();
  register_formula("expr-e1", 8192, 8192, 3,
                   [](DeviceMatrix<float>& R, const DeviceMatrix<float>& A, const DeviceMatrix<float>& B,
                      const DeviceMatrix<float>& C, bool unfused = false) {
                     if (!unfused) {
                       R = (2.f * A + B) / 2.f - abs(C);
                       return;
                     }
                     DeviceMatrix<float> t = 2.f * A;
                     t = t + B;
                     t = t / 2.f;
                     R = abs(C);
                     R = t - R;
                   },
                   E1{});
  register_formula("expr-add-sub", 8192, 8192, 3,
                   [](DeviceMatrix<float>& R, const DeviceMatrix<float>& A, const DeviceMatrix<float>& B,
                      const DeviceMatrix<float>& C, bool unfused = false) {
                     if (!unfused) {
                       R = A + B - C;
                       return;
                     }
                     R = A + B;
                     R = R - C;
                   },
                   AddSub{});
  register_formula("expr-gradmag", 4096, 4096, 2,
                   [](DeviceMatrix<float>& R, const DeviceMatrix<float>& A, const DeviceMatrix<float>& B,
                      const DeviceMatrix<float>&, bool unfused = false) {
                     if (!unfused) {
                       R = sqrt(square(A) + square(B));
                       return;
                     }
                     DeviceMatrix<float> t = square(A);
                     R = square(B);
                     R = t + R;
                     R = sqrt(R);
                   },
                   GradMag{});
  register_sqdiff_sum(Index(1) << 28);
  register_chain();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
