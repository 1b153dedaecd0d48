// transpose(): ours beside a device-to-device copy of the same bytes, plus the other tile
// shapes of dispatch/transpose.cuh (impl "ours-w<W>t<TW>b<BY>") so one run picks the fastest.
// GB/s count bytes read plus bytes written.
#include "random.cuh"
#include "support.hpp"

#include "dispatch/transpose.cuh"

#include <devmat/devmat.hpp>

#include <cstdint>
#include <string>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;
using b::dtype;
using b::random_matrix;
namespace d = devmat::detail;

/// Counts positions where out (cols x rows) is not the transpose of in (rows x cols).
template <class T>
__global__ void count_mismatches_kernel(const T* in, const T* out, Index rows, Index cols,
                                        unsigned long long* bad) {
  unsigned long long local = 0;
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < rows * cols; i += Index(gridDim.x) * blockDim.x) {
    const Index r = i / cols, c = i % cols;
    local += in[i] != out[c * rows + r];
  }
  if (local) atomicAdd(bad, local);
}

template <class T>
bool is_transpose(const DeviceMatrix<T>& in, const DeviceMatrix<T>& out) {
  DeviceMatrix<std::uint64_t> bad = DeviceMatrix<std::uint64_t>::zeros(1, 1, in.stream());
  count_mismatches_kernel<<<1024, 256, 0, in.stream().native()>>>(
      in.data(), out.data(), in.rows(), in.cols(), reinterpret_cast<unsigned long long*>(bad.data()));
  DEVMAT_BENCH_CUDA(cudaGetLastError());
  return out.rows() == in.cols() && out.cols() == in.rows() && bad.to_vector()[0] == 0;
}

std::string shape_of(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

template <class T>
void register_ours_and_memcpy(Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("transpose", dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B = A.transpose();
    if (!is_transpose(A, B)) return st.SkipWithError("transpose result is wrong");
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { B = A.transpose(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("transpose", dtype<T>(), sh, "memcpy").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B(cols, rows);
    const cudaStream_t s = A.stream().native();
    b::time_on_stream(st, s, bytes, b::kGBps, [&] {
      DEVMAT_BENCH_CUDA(cudaMemcpyAsync(B.data(), A.data(), A.size() * sizeof(T), cudaMemcpyDeviceToDevice, s));
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// One tile shape of dispatch/transpose.cuh, launched directly.
template <class T, int W, int TW, int BY>
void register_tile(Index rows, Index cols) {
  using Tile = d::TransposeTile<W, TW, BY>;
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string impl = "ours-w" + std::to_string(W) + "t" + std::to_string(TW) + "b" + std::to_string(BY);
  benchmark::RegisterBenchmark(b::name("transpose", dtype<T>(), shape_of(rows, cols), impl).c_str(),
                               [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B(cols, rows);
    const cudaStream_t s = A.stream().native();
    auto op = [&] { d::launch_transpose<T, Tile, d::TransposeTile<1, 64, 8>>(A.data(), cols, B.data(), rows, cols, s); };
    op();
    if (!is_transpose(A, B)) return st.SkipWithError("transpose result is wrong");
    b::time_on_stream(st, s, bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
}  // namespace

int main(int argc, char** argv) {
  const Index n = 16384;
  register_ours_and_memcpy<float>(n, n);
  register_tile<float, 1, 32, 8>(n, n);
  register_tile<float, 1, 64, 8>(n, n);
  register_tile<float, 1, 64, 16>(n, n);
  register_tile<float, 2, 32, 8>(n, n);
  register_tile<float, 4, 32, 8>(n, n);   // 16-byte words, 128 x 128 tile, 64 KiB
  register_tile<float, 4, 32, 16>(n, n);

  register_ours_and_memcpy<std::uint8_t>(n, n);
  register_tile<std::uint8_t, 4, 32, 8>(n, n);
  register_tile<std::uint8_t, 4, 32, 16>(n, n);
  register_tile<std::uint8_t, 4, 32, 4>(n, n);
  register_tile<std::uint8_t, 8, 32, 16>(n, n);  // 8-byte words, 256 x 256 tile, 64 KiB
  register_tile<std::uint8_t, 1, 64, 8>(n, n);  // the fallback for shapes not a multiple of 4

  register_ours_and_memcpy<double>(n, n);
  register_tile<double, 1, 32, 8>(n, n);
  register_tile<double, 2, 32, 8>(n, n);
  register_tile<double, 2, 32, 16>(n, n);

  // Very wide and very tall (1 GiB each).
  register_ours_and_memcpy<float>(64, Index(1) << 22);
  register_ours_and_memcpy<float>(Index(1) << 22, 64);
  register_ours_and_memcpy<std::uint8_t>(4096 + 4, 4096 * 64);  // not a multiple of the 128-byte tile

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
