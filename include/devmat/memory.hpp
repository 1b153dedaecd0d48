// devmat's device memory pool. Plain C++.
/// @file
/// devmat's device memory pool: pool_stats() and trim_pool().
#pragma once

#include <cstddef>

namespace devmat {

/// devmat allocates every matrix stream-ordered (cudaMallocAsync) from one memory pool per
/// device. Freed blocks stay in the pool for reuse (no release threshold), so temporaries cost
/// no cudaMalloc; blocks up to 64 MiB (256 MiB in all) freed on a stream devmat owns are also
/// kept for the next allocation of that size on that stream, so they cost no allocator call
/// either (a full cache gives its oldest blocks back to make room). `trim_pool` returns the
/// cache to the pool and unused memory to the driver; an allocation that fails returns it and
/// tries again.
struct PoolStats {
  std::size_t reserved = 0;  ///< bytes the pool holds from the driver
  std::size_t used = 0;      ///< bytes allocated from the pool (live matrices and the cache)
  std::size_t cached = 0;    ///< of `used`, freed blocks kept per stream for reuse
};

/// Statistics of the current device's pool.
PoolStats pool_stats();

/// Releases unused memory of the current device's pool until it holds at most `keep_bytes`
/// (work queued on streams is not waited for; memory still pending a stream-ordered free stays).
void trim_pool(std::size_t keep_bytes = 0);

}  // namespace devmat
