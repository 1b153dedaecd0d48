// A user's own pending CUDA error belongs to the user: devmat neither clears it nor reports it as
// its own. (devmat used to call cudaGetLastError() after its launches and in from_host, which
// threw the user's error from devmat's next operation, or silently cleared it.)
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <vector>

using namespace devmat;
using namespace devmat::test;

// [api-error]: provokes CUDA API errors on purpose, which compute-sanitizer reports as errors;
// scripts/gpu-check leaves these tests out of its sanitizer runs.
TEST_CASE("a user's pending launch error survives devmat's operations", "[api-error]") {
  const Stream s = Stream::create();
  const std::vector<float> host(64 * 48, 1.5f);
  const auto A = DeviceMatrix<float>::from_vector(host, 64, 48, s);
  const auto B = DeviceMatrix<float>::constant(64, 48, 2.0f, s);
  // Once per kernel and device, devmat prepares each GEMM kernel with cudaFuncSetAttribute
  // (shared-memory carveout and size), and that CUDA call itself clears the thread's pending
  // error (seen on CUDA 13.0, driver 580): run the product once before the user's error, as a
  // program that has multiplied before would have. README, "Errors", says so.
  (void)(A * B.transpose());
  s.synchronize();
  REQUIRE(cudaGetLastError() == cudaSuccess);

  const cudaError_t users = make_pending_launch_error();  // an invalid launch of the user's own
  REQUIRE(users != cudaSuccess);
  DeviceMatrix<float> C;
  float total = 0;
  // After each operation the user's error is still the pending one.
  CHECK_NOTHROW(C = DeviceMatrix<float>::from_vector(host, 64, 48, s));  // host pointer query
  CHECK(cudaPeekAtLastError() == users);
  CHECK_NOTHROW(C = A + B);  // a launch of ours
  CHECK(cudaPeekAtLastError() == users);
  CHECK_NOTHROW(total = (A + B).sum());  // launches and a workspace
  CHECK(cudaPeekAtLastError() == users);
  CHECK_NOTHROW(C = A * B.transpose());  // the GEMM dispatch
  CHECK(cudaPeekAtLastError() == users);
  CHECK(total == 3.5f * 64 * 48);  // exact: 3072 halves
  CHECK(cudaGetLastError() == users);  // still the user's to read, once
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("devmat's own failures do not stay behind as the thread's last error", "[api-error]") {
  REQUIRE(cudaGetLastError() == cudaSuccess);
  std::size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  // Past what is free but within the card's size, so the driver is asked and refuses.
  const std::size_t bytes = free_b + (total_b - free_b) / 2 + (std::size_t(1) << 20);
  const Index cols = static_cast<Index>(bytes / (1024 * sizeof(float)));
  CHECK_THROWS_AS(DeviceMatrix<float>(1024, cols), out_of_memory);
  CHECK(cudaGetLastError() == cudaSuccess);  // the exception reported it; nothing is left behind
}
