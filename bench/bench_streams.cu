// A chain of 10 small element-wise operations on 256x256 matrices: time per operation of
// devmat (pool-allocated temporaries) beside the same chain with a cudaMalloc/cudaFree per
// temporary, and beside bare kernel launches into preallocated buffers (the floor).
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <vector>

namespace {
using devmat::DeviceMatrix;
namespace b = devmat::bench;
constexpr int kN = 256;
constexpr int kOps = 10;

__global__ void add_kernel(float* out, const float* a, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + x[i];
}

// Throughput in million operations per second (work = kOps per chain); us_per_op = 1/value.
void chain_ours(benchmark::State& st) {
  devmat::Stream s = devmat::Stream::create();
  auto A = DeviceMatrix<float>::constant(kN, kN, 1.f, s);
  auto B = DeviceMatrix<float>::constant(kN, kN, 2.f, s);
  DeviceMatrix<float> R;
  b::time_on_stream(st, s.native(), kOps, b::kMops, [&] {
    DeviceMatrix<float> t = A + B;  // 1 (allocates)
    for (int i = 1; i < kOps; ++i) t = (i % 2) ? A + t : t - B;  // 9 more, each a new temporary
    R = std::move(t);
  });
  st.counters["us_per_op"] = 1.0 / st.counters["value"];
}

void chain_cudamalloc(benchmark::State& st) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  auto A = DeviceMatrix<float>::constant(kN, kN, 1.f, devmat::Stream::wrap(s));
  auto B = DeviceMatrix<float>::constant(kN, kN, 2.f, devmat::Stream::wrap(s));
  const int n = kN * kN;
  b::time_on_stream(st, s, kOps, b::kMops, [&] {
    float* prev = nullptr;
    for (int i = 0; i < kOps; ++i) {
      float* out;
      DEVMAT_BENCH_CUDA(cudaMalloc(&out, n * sizeof(float)));
      add_kernel<<<(n + 255) / 256, 256, 0, s>>>(out, A.data(), prev ? prev : B.data(), n);
      if (prev) DEVMAT_BENCH_CUDA(cudaFree(prev));
      prev = out;
    }
    DEVMAT_BENCH_CUDA(cudaFree(prev));
  });
  st.counters["us_per_op"] = 1.0 / st.counters["value"];
  cudaStreamSynchronize(s);
  A = DeviceMatrix<float>();
  B = DeviceMatrix<float>();
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

void chain_launch_only(benchmark::State& st) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const int n = kN * kN;
  float *a, *x, *y;
  cudaMalloc(&a, n * sizeof(float));
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  b::time_on_stream(st, s, kOps, b::kMops, [&] {
    for (int i = 0; i < kOps; ++i) {
      add_kernel<<<(n + 255) / 256, 256, 0, s>>>(i % 2 ? y : x, a, i % 2 ? x : y, n);
    }
  });
  st.counters["us_per_op"] = 1.0 / st.counters["value"];
  cudaStreamSynchronize(s);
  cudaFree(a);
  cudaFree(x);
  cudaFree(y);
  cudaStreamDestroy(s);
}
}  // namespace

int main(int argc, char** argv) {
  const std::string shape = std::to_string(kN) + "x" + std::to_string(kN);
  benchmark::RegisterBenchmark(b::name("chain10", "f32", shape, "ours").c_str(), chain_ours)
      ->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name("chain10", "f32", shape, "cudamalloc").c_str(), chain_cudamalloc)
      ->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name("chain10", "f32", shape, "launch-only").c_str(), chain_launch_only)
      ->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
