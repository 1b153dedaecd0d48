// Benchmark helpers: CUDA-event manual timing and the naming convention that
// scripts/bench_table.py turns into bench/RESULTS.md rows.
//
// Each benchmark is named  <op>/<dtype>/<shape>/<impl>  where impl is "ours" or the reference
// ("cublas", "cub", "thrust", "memcpy", "eigen-cpu", or "dense": ours on a dense matrix of a
// view's shape, the reference of the view benchmarks); its counter "value" is the throughput in
// the unit given by the counter "unit" code (see kUnits). Pairs with the same op/dtype/shape
// make one table row, ratio = ours / reference.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace devmat::bench {

#define DEVMAT_BENCH_CUDA(call)                                                       \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

enum Unit { kGBps = 1, kTflops = 2, kMpixps = 3, kMops = 4 };

/// Nothing, before each timed call (time_on_stream's default).
struct NothingBefore {
  void operator()() const {}
};

/// Times `op` (which enqueues work on `stream`) with CUDA events, one warm-up first; sets the
/// manual iteration time and the "value" counter = work_per_iter / time in `unit`. `before` is
/// queued ahead of each timed call, outside the events (time_queued: a spin kernel).
template <class Op, class Before = NothingBefore>
void time_on_stream(benchmark::State& state, cudaStream_t stream, double work_per_iter, Unit unit, Op&& op,
                    Before&& before = {}) {
  op();
  DEVMAT_BENCH_CUDA(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  DEVMAT_BENCH_CUDA(cudaEventCreate(&start));
  DEVMAT_BENCH_CUDA(cudaEventCreate(&stop));
  double total_s = 0;
  for (auto _ : state) {
    before();
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

/// The dtype column of RESULTS.md.
template <class T>
const char* dtype() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "no dtype name");
    return "u8";
  }
}

inline std::string name(const std::string& op, const std::string& dtype, const std::string& shape,
                        const std::string& impl) {
  return op + "/" + dtype + "/" + shape + "/" + impl;
}

}  // namespace devmat::bench
