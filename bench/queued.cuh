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
  time_on_stream(state, stream, work_per_iter, unit, op, [&] { spin_kernel<<<1, 1, 0, stream>>>(spin_ns); });
}

}  // namespace devmat::bench
