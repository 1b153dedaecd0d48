// Device-time measurement with the host's work hidden: each timed call is queued behind a short
// spin kernel, so the host's time to queue it (a public call's allocation and kernel choice, a
// launch) leaves no idle gap inside the timed interval, as in a pipeline that keeps its stream
// busy (nvbench's blocking kernel does the same). For the benchmarks whose ratios are kernel
// throughput (bench_gemm, bench_transpose); time_on_stream (support.hpp) keeps the host's part.
#pragma once

#include "support.hpp"

#include <cuda_runtime.h>

namespace devmat::bench {

/// Holds the stream for `ns` nanoseconds, while the host queues the timed work behind it.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

/// time_on_stream with each call queued behind spin_kernel for `spin_ns` (a generous bound on the
/// host's time to queue one call): the events time the device's work only.
template <class Op>
void time_queued(benchmark::State& state, cudaStream_t stream, double work_per_iter, Unit unit, Op&& op,
                 unsigned long long spin_ns = 50000) {
  op();
  DEVMAT_BENCH_CUDA(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  DEVMAT_BENCH_CUDA(cudaEventCreate(&start));
  DEVMAT_BENCH_CUDA(cudaEventCreate(&stop));
  double total_s = 0;
  for (auto _ : state) {
    spin_kernel<<<1, 1, 0, stream>>>(spin_ns);
    DEVMAT_BENCH_CUDA(cudaEventRecord(start, stream));
    op();
    DEVMAT_BENCH_CUDA(cudaEventRecord(stop, stream));
    DEVMAT_BENCH_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    DEVMAT_BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3);
    total_s += ms * 1e-3;
  }
  DEVMAT_BENCH_CUDA(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  const double scale = unit == kTflops ? 1e12 : (unit == kGBps ? 1e9 : 1e6);
  state.counters["value"] = work_per_iter * static_cast<double>(state.iterations()) / total_s / scale;
  state.counters["unit"] = unit;
}

}  // namespace devmat::bench
