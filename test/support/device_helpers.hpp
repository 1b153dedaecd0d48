// Device-side helpers for tests.
#pragma once

#include <cuda_runtime_api.h>

namespace devmat::test {
/// Queues a kernel on `stream` that keeps one SM busy for about `ms` milliseconds.
void spin(cudaStream_t stream, double ms);
/// Launches a kernel with an invalid configuration, as a user's bug would, and returns the
/// error it leaves pending (not read: cudaGetLastError() returns it next).
cudaError_t make_pending_launch_error();
}  // namespace devmat::test
