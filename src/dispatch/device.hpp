// The one per-device properties cache and the one kernel occupancy cache that every operation's
// dispatch reads. Plain C++ (the CUDA runtime API only).
#pragma once

#include <cuda_runtime_api.h>

namespace devmat::detail {

/// What the dispatch layer needs to know about a device, read once per device.
struct DeviceProps {
  int device = 0;
  int sm_count = 1;
  int cc_major = 0, cc_minor = 0;  // compute capability
  int smem_per_block_optin = 0;    // bytes of shared memory a block may opt in to
  int smem_per_sm = 0;             // bytes of shared memory per SM
  double dram_gbps = 0;            // peak DRAM bandwidth, GB/s (memory clock on both edges x bus width)
  /// The compute capability as one number: 90 for sm_90.
  int arch() const noexcept { return cc_major * 10 + cc_minor; }
};

/// The calling thread's current CUDA device.
int current_device();

/// The properties of `device`, read on first use and cached for the life of the process
/// (thread-safe; the reference stays valid).
const DeviceProps& device_props(int device);
/// device_props(current_device()), without device_props' lock when the calling thread asks
/// about the same device as last time.
const DeviceProps& current_device_props();
/// device_props(device), without device_props' lock when the calling thread asks about the same
/// device as last time, and with no CUDA call: for a caller that knows its device (a stream's).
const DeviceProps& cached_device_props(int device);

/// How many blocks of `kernel` one SM of the current device runs at once with `threads` threads
/// and `dynamic_smem` bytes of dynamic shared memory per block (at least 1). The first call for
/// a kernel on a device also prepares it there: a kernel that asks for more than 48 KiB opts in
/// to that much, and `prefer_shared` asks for the largest shared-memory carveout. So call it
/// before launching such a kernel. Cached per (kernel, device, threads, dynamic_smem): grids
/// sized from it are the same on every call, which keeps the reductions deterministic.
/// Note: CUDA's cudaFuncSetAttribute, used by that first preparation, clears the calling
/// thread's pending CUDA error (seen on CUDA 13.0); devmat's own code never does.
int blocks_per_sm(const void* kernel, int threads, int dynamic_smem = 0, bool prefer_shared = false);

/// SM count x blocks_per_sm: how many blocks of `kernel` the current device runs at once.
long long resident_blocks(const void* kernel, int threads, int dynamic_smem = 0);

}  // namespace devmat::detail
