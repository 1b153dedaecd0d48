// Element-wise add: ours beside thrust::transform with thrust::plus on the same inputs; and add
// on strided windows (add-strided, add-inplace-strided) beside the same add on dense matrices of
// the window's shape (impl "dense"), which shows what an odd stride costs the slot kernel.
#include "random.cuh"
#include "support.hpp"

#include "expr/engine.hpp"

#include <devmat/devmat.hpp>

#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;
using b::dtype;
using b::random_matrix;

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
  // ours-u<N>: the flat kernel with N units a thread (set_expr_flat_units; the default is
  // elementwise_unroll's 4, or 2 for 16-element vectors: u8), at the largest size only.
  for (int u : {1, 2, 4, 8}) {
    if (n < (Index(1) << 27)) break;
    benchmark::RegisterBenchmark(b::name("add", dtype<T>(), sz, "ours-u" + std::to_string(u)).c_str(),
                                 [=](benchmark::State& st) {
                                   auto A = DeviceMatrix<T>::constant(rows, cols, T(1));
                                   auto B = DeviceMatrix<T>::constant(rows, cols, T(2));
                                   DeviceMatrix<T> C(rows, cols);
                                   devmat::detail::set_expr_flat_units(u);
                                   b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { C = A + B; });
                                   devmat::detail::set_expr_flat_units(0);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
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
/// Windows at column 1 of rows x (cols + 2) matrices: with cols odd the stride cols + 2 is odd,
/// so the rows start at every offset within 16 bytes, the output's (dense, cols wide) too.
/// add-strided: a new dense result = window + window; add-inplace-strided: window += window.
/// Checked once against the dense add of dense copies. GB/s: three cols-wide operands.
template <class T>
void register_add_strided(Index rows, Index cols) {
  const double bytes = 3.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = std::to_string(rows) + "x" + std::to_string(cols);
  const auto differs = [](const DeviceMatrix<T>& x, const DeviceMatrix<T>& y) {
    return std::max((x - y).max(), (y - x).max()) != T(0);  // exact for floats and wrapping integers
  };
  benchmark::RegisterBenchmark(b::name("add-strided", dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols + 2, 1);
    const auto B = random_matrix<T>(rows, cols + 2, 2);
    const auto va = A.block(0, 1, rows, cols), vb = B.block(0, 1, rows, cols);
    DeviceMatrix<T> C = va + vb;
    if (differs(C, DeviceMatrix<T>(va) + DeviceMatrix<T>(vb))) return st.SkipWithError("strided add is wrong");
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { C = va + vb; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("add-strided", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols, 1);
    const auto B = random_matrix<T>(rows, cols, 2);
    DeviceMatrix<T> C = A + B;
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { C = A + B; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("add-inplace-strided", dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    auto A = random_matrix<T>(rows, cols + 2, 1);
    const auto B = random_matrix<T>(rows, cols + 2, 2);
    const auto vb = B.block(0, 1, rows, cols);
    const DeviceMatrix<T> before(A.block(0, 1, rows, cols));
    A.block(0, 1, rows, cols) += vb;
    if (differs(DeviceMatrix<T>(A.block(0, 1, rows, cols)), before + DeviceMatrix<T>(vb)))
      return st.SkipWithError("strided += is wrong");
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { A.block(0, 1, rows, cols) += vb; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("add-inplace-strided", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    auto A = random_matrix<T>(rows, cols, 1);
    const auto B = random_matrix<T>(rows, cols, 2);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { A += B; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
}  // namespace

int main(int argc, char** argv) {
  for (Index n : {Index(1) << 20, Index(1) << 24, Index(1) << 28}) register_add<float>(n);
  register_add<double>(Index(1) << 27);
  register_add<std::uint8_t>(Index(1) << 28);
  register_add<std::int32_t>(Index(1) << 28);
  register_add_strided<float>(8192, 4095);
  register_add_strided<std::uint8_t>(16384, 4095);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
