// Device-side helpers for tests.
#pragma once

#include <cuda_runtime_api.h>

namespace devmat::test {
/// Queues a kernel on `stream` that keeps one SM busy for about `ms` milliseconds.
void spin(cudaStream_t stream, double ms);
}  // namespace devmat::test
