// devmat's device memory pool. Plain C++.
#pragma once

#include <cstddef>

namespace devmat {

/// devmat allocates every matrix stream-ordered (cudaMallocAsync) from one memory pool per
/// device. Freed blocks stay in the pool for reuse (no release threshold), so temporaries cost
/// no cudaMalloc; `trim_pool` hands unused memory back to the driver.
struct PoolStats {
  std::size_t reserved = 0;  ///< bytes the pool holds from the driver
  std::size_t used = 0;      ///< bytes currently allocated to live matrices (or pending frees)
};

/// Statistics of the current device's pool.
PoolStats pool_stats();

/// Releases unused memory of the current device's pool until it holds at most `keep_bytes`
/// (work queued on streams is not waited for; memory still pending a stream-ordered free stays).
void trim_pool(std::size_t keep_bytes = 0);

}  // namespace devmat
