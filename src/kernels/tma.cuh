// The Hopper asynchronous copy primitives that kernels share: mbarriers (init, arrive with an
// expected transaction count, parity waits), TMA loads of 2-D boxes (cp.async.bulk.tensor,
// completing on an mbarrier) and the proxy fence between ordinary shared-memory writes and the
// async proxy. sm_90 on (plain sm_90: none of these needs sm_90a); elsewhere, and in the host
// pass, they compile to nothing, and callers launch their kernels only where the device runs
// sm_90 code.
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: no driver library is linked)

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DEVMAT_TMA_DEVICE 1
#else
#define DEVMAT_TMA_DEVICE 0
#endif

namespace devmat::detail {

__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#else
  (void)bar, (void)count;
#endif
}
/// Makes the barrier initialisations visible to the async proxy (TMA) as well.
__device__ __forceinline__ void mbar_init_fence() {
#if DEVMAT_TMA_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
/// One arrival that also expects `bytes` of transactions in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#else
  (void)bar, (void)bytes;
#endif
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
#if DEVMAT_TMA_DEVICE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#else
  (void)bar;
#endif
}
/// One poll: true once the phase of parity `parity` has completed (try_wait may suspend the
/// thread for a while first). A fresh barrier is in phase 0, and the phase "before" it, of
/// parity 1, counts as completed.
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 1;
#if DEVMAT_TMA_DEVICE
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
#endif
  return done != 0;
}
/// Polls until that phase has completed. A watchdog: a wait that never ends (a phase or
/// byte-count mistake) traps after 2^28 polls (at least a second), so that a test or benchmark
/// fails with a launch error instead of hanging the run.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
#if DEVMAT_TMA_DEVICE
  constexpr long long kWatchdogPolls = 1ll << 28;
  for (long long polls = 0; !mbar_try_wait(bar, parity);)
    if (++polls == kWatchdogPolls) __trap();
#else
  (void)bar, (void)parity;
#endif
}
/// TMA: the box at coordinates (c0 innermost, c1) of `map` into shared `dst`, completing
/// transactions on `bar`. c0 times the element size must be a multiple of 16 bytes (the box's
/// start in memory 16-byte aligned), which the map's encoding cannot check: the TMA refuses any
/// other with an illegal instruction (measured on the H100, session 40).
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int c0,
                                            int c1) {
#if DEVMAT_TMA_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
#else
  (void)dst, (void)map, (void)bar, (void)c0, (void)c1;
#endif
}
/// Generic-proxy writes to shared memory become visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async() {
#if DEVMAT_TMA_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

}  // namespace devmat::detail
