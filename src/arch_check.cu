// check_device_arch: asks CUDA, through a trivial probe kernel compiled like every other
// kernel of libdevmat, whether the library has code for a device; when it has none, the error
// says which GPU, which architectures the library has, and how to rebuild it.
#include "detail/arch_check.hpp"
#include "detail/device_guard.hpp"

#include <devmat/error.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

// CMake sets this from CMAKE_CUDA_ARCHITECTURES (space-separated) for this file alone.
#ifndef DEVMAT_CUDA_ARCHITECTURES
#define DEVMAT_CUDA_ARCHITECTURES "unknown"
#endif

namespace devmat::detail {
namespace {

// Same flags and architectures as every kernel of libdevmat: if the runtime finds no image of
// it for a device, it finds none of theirs.
__global__ void arch_probe_kernel() {}

// "" when the device has code; otherwise the error thrown for it. Throws (uncached) when CUDA
// cannot answer at all.
std::pair<cudaError_t, std::string> probe(int device) {
  cudaError_t st;
  {
    const DeviceGuard on(device);
    cudaFuncAttributes attr{};
    st = cudaFuncGetAttributes(&attr, arch_probe_kernel);
    cudaGetLastError();  // not sticky: clear it, so the next launch check does not see it
  }
  if (st == cudaSuccess) return {cudaSuccess, {}};
  if (st != cudaErrorNoKernelImageForDevice && st != cudaErrorInvalidDeviceFunction)
    throw_cuda_error(st, "cudaFuncGetAttributes(arch_probe_kernel)", __FILE__, __LINE__);
  int major = 0, minor = 0;
  DEVMAT_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DEVMAT_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  cudaDeviceProp prop{};
  const std::string name =
      cudaGetDeviceProperties(&prop, device) == cudaSuccess ? prop.name : "unknown GPU";
  return {st, arch_mismatch_message(device, name, major, minor, built_cuda_architectures())};
}

}  // namespace

const char* built_cuda_architectures() noexcept { return DEVMAT_CUDA_ARCHITECTURES; }

std::string arch_mismatch_message(int device, const std::string& name, int major, int minor,
                                  const std::string& built_for) {
  const std::string sm = std::to_string(major * 10 + minor);
  std::string list = built_for;
  std::replace(list.begin(), list.end(), ' ', ';');
  return "devmat: libdevmat has no code for device " + std::to_string(device) + " (" + name +
         ", compute capability " + std::to_string(major) + "." + std::to_string(minor) +
         "): it was built for CUDA architectures " + list +
         " (CMAKE_CUDA_ARCHITECTURES). Rebuild devmat with -DCMAKE_CUDA_ARCHITECTURES=" + sm +
         ", or \"" + list + ";" + sm + "\" to keep the others";
}

void check_device_arch(int device) {
  static std::mutex mu;
  static std::map<int, std::pair<cudaError_t, std::string>> answers;
  std::lock_guard<std::mutex> lock(mu);
  auto it = answers.find(device);
  if (it == answers.end()) it = answers.emplace(device, probe(device)).first;
  if (it->second.first != cudaSuccess) throw cuda_error(it->second.first, it->second.second);
}

}  // namespace devmat::detail
