// Host test of check_device_arch (src/arch_check.cu): the message that replaces CUDA's generic
// "no kernel image", and the call itself, which asks CUDA without launching anything. Runs
// without a GPU: there the call must fail with CUDA's own no-device error, not claim a missing
// kernel image; on a GPU the library was built for, it must pass (twice: the answer is cached).
#include "support/util.hpp"

#include "detail/arch_check.hpp"

#include <cuda_runtime_api.h>

#include <string>

using devmat::detail::arch_mismatch_message;
using devmat::detail::check_device_arch;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("arch_check: the message names the GPU, the built architectures and the rebuild flag") {
  const std::string msg = arch_mismatch_message(1, "NVIDIA A100-SXM4-80GB", 8, 0, "90");
  CAPTURE(msg);
  CHECK(has(msg, "device 1 (NVIDIA A100-SXM4-80GB, compute capability 8.0)"));
  CHECK(has(msg, "built for CUDA architectures 90 "));
  CHECK(has(msg, "-DCMAKE_CUDA_ARCHITECTURES=80"));
  CHECK(has(msg, "\"90;80\""));

  const std::string several = arch_mismatch_message(0, "GPU", 7, 5, "80 86 89 90");
  CAPTURE(several);
  CHECK(has(several, "compute capability 7.5"));
  CHECK(has(several, "architectures 80;86;89;90 "));
  CHECK(has(several, "-DCMAKE_CUDA_ARCHITECTURES=75"));
  CHECK(has(several, "\"80;86;89;90;75\""));
}

TEST_CASE("arch_check: the built architectures come from CMake") {
  const std::string built = devmat::detail::built_cuda_architectures();
  CAPTURE(built);
  CHECK_FALSE(built.empty());
  CHECK(built != "unknown");
}

TEST_CASE("arch_check: no device is CUDA's error; a device the library was built for passes") {
  int count = 0;
  const bool device = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  cudaGetLastError();
  if (!device) {
    try {
      check_device_arch(0);
      FAIL("no throw without a device");
    } catch (const devmat::cuda_error& e) {
      CAPTURE(e.what());
      CHECK(e.code() != cudaErrorNoKernelImageForDevice);
      CHECK(e.code() != cudaErrorInvalidDeviceFunction);
    }
  } else {
    CHECK_NOTHROW(check_device_arch(0));
    CHECK_NOTHROW(check_device_arch(0));
    int current = -1;
    REQUIRE(cudaGetDevice(&current) == cudaSuccess);
    CHECK(current == 0);
  }
}
