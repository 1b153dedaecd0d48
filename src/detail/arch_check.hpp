// Does libdevmat have code for a device? A clear error instead of CUDA's generic "no kernel
// image is available for execution on the device" at the first launch (src/arch_check.cu).
// Plain C++.
#pragma once

#include <string>

namespace devmat::detail {

/// Throws cuda_error (code cudaErrorNoKernelImageForDevice or cudaErrorInvalidDeviceFunction)
/// when libdevmat has no code that runs on `device`, with arch_mismatch_message's text. The
/// answer is cached per device (thread-safe), so only the first call per device asks CUDA.
/// Other CUDA failures (no device, no driver) throw cuda_error with CUDA's code, uncached.
/// Leaves the calling thread's current device as it was.
void check_device_arch(int device);

/// The CUDA architectures libdevmat was built for: CMAKE_CUDA_ARCHITECTURES, space-separated.
const char* built_cuda_architectures() noexcept;

/// The error's text: names the device, its compute capability, the architectures built for,
/// and the -DCMAKE_CUDA_ARCHITECTURES to rebuild with. `built_for` is space-separated.
std::string arch_mismatch_message(int device, const std::string& name, int major, int minor,
                                  const std::string& built_for);

}  // namespace devmat::detail
