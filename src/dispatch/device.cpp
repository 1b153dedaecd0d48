// The device properties and occupancy caches (dispatch/device.hpp).
#include "dispatch/device.hpp"

#include "detail/arch_check.hpp"

#include <devmat/error.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace devmat::detail {

int current_device() {
  int dev = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
  return dev;
}

namespace {
DeviceProps read_props(int dev) {
  check_device_arch(dev);  // no dispatch for a device that libdevmat has no code for
  DeviceProps p;
  p.device = dev;
  const auto attr = [dev](cudaDeviceAttr a) {
    int v = 0;
    DEVMAT_CUDA_TRY(cudaDeviceGetAttribute(&v, a, dev));
    return v;
  };
  p.sm_count = std::max(attr(cudaDevAttrMultiProcessorCount), 1);
  p.cc_major = attr(cudaDevAttrComputeCapabilityMajor);
  p.cc_minor = attr(cudaDevAttrComputeCapabilityMinor);
  p.smem_per_block_optin = attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  // kHz, two transfers a clock, bits: H100 SXM 2619 MHz x 5120 bits = 3352 GB/s, H200 4.8 TB/s.
  p.dram_gbps = 2.0 * attr(cudaDevAttrMemoryClockRate) * 1e3 * attr(cudaDevAttrGlobalMemoryBusWidth) / 8 / 1e9;
  return p;
}
}  // namespace

const DeviceProps& device_props(int device) {
  static std::mutex mu;
  static auto* cache = new std::vector<std::unique_ptr<DeviceProps>>;  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  if (device < 0) throw cuda_error(cudaErrorInvalidDevice, "devmat: invalid device ordinal");
  if (static_cast<std::size_t>(device) >= cache->size()) cache->resize(static_cast<std::size_t>(device) + 1);
  auto& slot = (*cache)[static_cast<std::size_t>(device)];
  if (!slot) slot = std::make_unique<DeviceProps>(read_props(device));
  return *slot;
}

const DeviceProps& current_device_props() { return cached_device_props(current_device()); }

const DeviceProps& cached_device_props(int dev) {
  // initial-exec: a %fs-relative load, not a __tls_get_addr call (libdevmat is a shared library).
  [[gnu::tls_model("initial-exec")]] thread_local int last_device = -1;
  [[gnu::tls_model("initial-exec")]] thread_local const DeviceProps* last = nullptr;  // device_props' entries never move
  if (dev != last_device) {
    last = &device_props(dev);
    last_device = dev;
  }
  return *last;
}

namespace {
struct KernelKey {
  const void* kernel;
  int device, threads, smem;
  bool operator==(const KernelKey& o) const noexcept {
    return kernel == o.kernel && device == o.device && threads == o.threads && smem == o.smem;
  }
};
struct KernelKeyHash {
  std::size_t operator()(const KernelKey& k) const noexcept {
    std::size_t h = std::hash<const void*>()(k.kernel);
    for (int v : {k.device, k.threads, k.smem}) h = h * 1000003u ^ std::hash<int>()(v);
    return h;
  }
};
}  // namespace

int blocks_per_sm(const void* kernel, int threads, int dynamic_smem, bool prefer_shared) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<KernelKey, int, KernelKeyHash>;  // never destroyed
  static auto* opted_in = new std::set<std::pair<const void*, int>>;          // (kernel, device)
  const KernelKey key{kernel, current_device(), threads, dynamic_smem};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache->find(key); it != cache->end()) return it->second;
  // The opt-in is a per-kernel limit, not a per-launch size: raise it once to all the device
  // allows. (Setting it to each request's size lowered it for a kernel launched with several
  // sizes: a 60 KB request after a 68 KB one left the 68 KB launches failing with
  // cudaErrorInvalidValue once the 68 KB key was cached; run T2, morph_tile_kernel.)
  if (dynamic_smem > 48 * 1024) {
    if (opted_in->insert({kernel, key.device}).second) {
      cudaFuncAttributes attr{};
      DEVMAT_CUDA_TRY(cudaFuncGetAttributes(&attr, kernel));  // the limit counts static shared memory too
      const int room = device_props(key.device).smem_per_block_optin - static_cast<int>(attr.sharedSizeBytes);
      DEVMAT_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(dynamic_smem, room)));
    }
  }
  if (prefer_shared)
    DEVMAT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
  int n = 0;
  DEVMAT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, dynamic_smem));
  n = std::max(n, 1);
  cache->emplace(key, n);
  return n;
}

long long resident_blocks(const void* kernel, int threads, int dynamic_smem) {
  return static_cast<long long>(current_device_props().sm_count) * blocks_per_sm(kernel, threads, dynamic_smem);
}

}  // namespace devmat::detail
