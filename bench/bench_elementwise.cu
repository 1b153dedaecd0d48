// Element-wise add: ours beside thrust::transform with thrust::plus on the same inputs.
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>

#include <cstdint>
#include <string>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;
using b::dtype;

template <class T>
void register_add(Index n) {
  const Index rows = n >= 1024 ? 1024 : 1, cols = n / rows;
  const double bytes = 3.0 * static_cast<double>(n) * sizeof(T);
  const std::string sz = std::to_string(n);
  benchmark::RegisterBenchmark(b::name("add", dtype<T>(), sz, "ours").c_str(), [=](benchmark::State& st) {
    auto A = DeviceMatrix<T>::constant(rows, cols, T(1));
    auto B = DeviceMatrix<T>::constant(rows, cols, T(2));
    DeviceMatrix<T> C(rows, cols);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { C = A + B; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("add", dtype<T>(), sz, "thrust").c_str(), [=](benchmark::State& st) {
    auto A = DeviceMatrix<T>::constant(rows, cols, T(1));
    auto B = DeviceMatrix<T>::constant(rows, cols, T(2));
    DeviceMatrix<T> C(rows, cols);
    const cudaStream_t s = A.stream().native();
    b::time_on_stream(st, s, bytes, b::kGBps, [&] {
      thrust::transform(thrust::cuda::par_nosync.on(s), A.data(), A.data() + n, B.data(), C.data(),
                        thrust::plus<T>());
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
}  // namespace

int main(int argc, char** argv) {
  for (Index n : {Index(1) << 20, Index(1) << 24, Index(1) << 28}) register_add<float>(n);
  register_add<double>(Index(1) << 27);
  register_add<std::uint8_t>(Index(1) << 28);
  register_add<std::int32_t>(Index(1) << 28);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
