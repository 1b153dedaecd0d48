// Host test: with no CUDA device (none here, or hidden by CUDA_VISIBLE_DEVICES=-1 under ctest),
// the first Stream or non-empty matrix throws cuda_error saying that no device was found.
#include "support/util.hpp"

#include <cstdlib>
#include <string>

using namespace devmat;

namespace {
bool device_visible() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}
}  // namespace

TEST_CASE("no CUDA device: Stream and non-empty matrices throw a clear cuda_error") {
  if (device_visible()) DEVMAT_SKIP("a CUDA device is visible (run it through ctest, which hides every device)");
  const auto check = [](auto&& make) {
    CHECK_THROWS_AS(make(), cuda_error);
    CHECK_THROWS_WITH(make(), test::contains("no CUDA device was found"));
  };
  check([] { Stream::create(); });
  check([] { Stream::per_thread(); });
  check([] { DeviceMatrix<float> m(3, 4); });
  check([] { DeviceMatrix<double>::zeros(1, 1); });
  check([] { DeviceMatrix<std::uint8_t>::from_vector({1, 2, 3}, 1, 3); });
  // empty ones still work
  DeviceMatrix<float> e(0, 4);
  CHECK(e.empty());
}
