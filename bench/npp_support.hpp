// NVIDIA NPP, the peer of the image benchmarks (built with DEVMAT_BENCH_HAVE_NPP=1 where CMake
// found it: cmake/devmat_peers.cmake). Rows name it "npp" (bench/support.hpp's naming).
#pragma once

#if DEVMAT_BENCH_HAVE_NPP
#include "support.hpp"

#include <npp.h>

#include <cstdio>
#include <cstdlib>

namespace devmat::bench {

#define DEVMAT_BENCH_NPP(call)                                                             \
  do {                                                                                     \
    NppStatus s_ = (call);                                                                 \
    if (s_ != NPP_SUCCESS) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: NPP status %d\n", __FILE__, __LINE__, #call, int(s_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

/// The stream context NPP's _Ctx functions run in, for `stream` on the current device (NPP 13
/// has no nppGetStreamContext: filled from the runtime, as its header says for each field).
inline NppStreamContext npp_context(cudaStream_t stream) {
  NppStreamContext ctx{};
  ctx.hStream = stream;
  DEVMAT_BENCH_CUDA(cudaGetDevice(&ctx.nCudaDeviceId));
  const int d = ctx.nCudaDeviceId;
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&ctx.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, d));
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&ctx.nMaxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor, d));
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&ctx.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, d));
  int smem = 0;
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, d));
  ctx.nSharedMemPerBlock = static_cast<size_t>(smem);
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMajor, d));
  DEVMAT_BENCH_CUDA(cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMinor, cudaDevAttrComputeCapabilityMinor, d));
  DEVMAT_BENCH_CUDA(cudaStreamGetFlags(stream, &ctx.nStreamFlags));
  return ctx;
}

/// npp_context(stream), made once per stream and thread (its queries would otherwise add host
/// time between the timing events to every NPP call).
inline const NppStreamContext& cached_npp_context(cudaStream_t stream) {
  thread_local cudaStream_t last = nullptr;
  thread_local NppStreamContext ctx{};
  thread_local bool made = false;
  if (!made || last != stream) {
    ctx = npp_context(stream);
    last = stream;
    made = true;
  }
  return ctx;
}

/// An NPP image size of rows x cols.
inline NppiSize npp_size(long long rows, long long cols) { return NppiSize{static_cast<int>(cols), static_cast<int>(rows)}; }

}  // namespace devmat::bench
#endif
