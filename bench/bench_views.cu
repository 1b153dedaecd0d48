// Operations on views: devmat on a window of a larger matrix ("ours") beside the same operation
// on a dense matrix of the window's shape ("dense", the reference), in the same run, so the
// ratio is what reading through a view costs. The windows sit at an odd offset on purpose
// (block(1, 3) of an 8192 x 8192 matrix: every row starts 12 bytes past a 16-byte boundary for
// f32); "ours-aligned" is the same window at (0, 0), every row aligned. view-add u8 reads a
// 16384 x 4095 window at column 1 of a 16384 x 8191 matrix: an odd stride, so its rows start
// at every offset within 16 bytes (16384 rows, not 4096: three 4096 x 4095 u8 operands would
// fit in the H200's 50 MB L2 between iterations and measure the cache, not memory).
//
// Names: view-add/<f32|u8>, view-sum/<f32|u8> (u8: view-add's odd-stride window),
// view-transpose/f32 (GB/s, bytes read plus written), view-gemm/f32 (TFLOP/s, 2 M N K); each
// ours | dense, plus ours-aligned, into a preallocated result. Each result is checked once
// against the dense operation on dense copies of the windows before timing.
#include "random.cuh"
#include "support.hpp"

#include "dispatch/reduce.cuh"

#include <devmat/devmat.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
using devmat::MatrixView;
namespace b = devmat::bench;
using b::dtype;
using b::random_matrix;

std::string shape_of(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

/// max |x - y| over two matrices of one shape, on the device (0 for an exact match).
template <class T>
double max_diff(const DeviceMatrix<T>& x, const DeviceMatrix<T>& y) {
  if constexpr (std::is_unsigned_v<T>) return static_cast<double>(std::max((x - y).max(), (y - x).max()));
  else return static_cast<double>((x - y).abs().max());
}

/// Two R x C matrices of random values and their rows x cols windows at (r0, c0).
template <class T>
struct Windows {
  DeviceMatrix<T> a, b;
  MatrixView<const T> va, vb;
  Windows(Index R, Index C, Index r0, Index c0, Index rows, Index cols)
      : a(random_matrix<T>(R, C, 1)), b(random_matrix<T>(R, C, 2)) {
    va = a.block(r0, c0, rows, cols);
    vb = b.block(r0, c0, rows, cols);
  }
};

// ------------------------------------------------------------------ view-add
/// view + view into a new dense matrix (ours, at (r0, c0) of R x C matrices, and ours-aligned
/// at (0, 0) where `aligned`), beside A + B on dense rows x cols matrices.
template <class T>
void register_add(Index R, Index C, Index r0, Index c0, Index rows, Index cols, bool aligned) {
  const double bytes = 3.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  const auto ours = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
      const Windows<T> w(R, C, wr0, wc0, rows, cols);
      DeviceMatrix<T> out = w.va + w.vb;
      const DeviceMatrix<T> want = DeviceMatrix<T>(w.va) + DeviceMatrix<T>(w.vb);
      if (max_diff(out, want) != 0) return st.SkipWithError("view + view differs from the dense sum");
      b::time_on_stream(st, w.a.stream().native(), bytes, b::kGBps, [&] { out = w.va + w.vb; });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-add", dtype<T>(), sh, "ours").c_str(), ours(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-add", dtype<T>(), sh, "ours-aligned").c_str(), ours(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("view-add", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols, 1);
    const auto B = random_matrix<T>(rows, cols, 2);
    DeviceMatrix<T> out = A + B;
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { out = A + B; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}


// ------------------------------------------------------------------ view-sum, view-transpose
/// view.sum_async() (no host sync in the timing) beside A.sum_async() on a dense matrix.
template <class T>
void register_sum(Index R, Index C, Index r0, Index c0, Index rows, Index cols, bool aligned) {
  const double bytes = static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  const auto ours = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
      const Windows<T> w(R, C, wr0, wc0, rows, cols);
      const double got = static_cast<double>(w.va.sum()), want = static_cast<double>(DeviceMatrix<T>(w.va).sum());
      if (!(std::fabs(got - want) <= 1e-5 * std::fabs(want))) return st.SkipWithError("view sum differs from the dense sum");
      b::time_on_stream(st, w.a.stream().native(), bytes, b::kGBps, [&] { auto r = w.va.sum_async(); });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-sum", dtype<T>(), sh, "ours").c_str(), ours(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-sum", dtype<T>(), sh, "ours-aligned").c_str(), ours(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("view-sum", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols, 1);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { auto r = A.sum_async(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// One configuration of the strided window sum (launch_reduce_2d<R, ReduceConfig<Threads,
/// Unroll, Oversub>>: chunks in flight per thread, blocks per resident slot) on the same window.
template <class T, int Threads, int Unroll, int Oversub,
          devmat::detail::WindowEdges Edges = devmat::detail::WindowEdges::automatic>
void register_sum_config(Index R, Index C, Index r0, Index c0, Index rows, Index cols) {
  namespace d = devmat::detail;
  using S = devmat::sum_t<T>;
  const double bytes = static_cast<double>(rows) * cols * sizeof(T);
  const std::string impl = "ours-t" + std::to_string(Threads) + "u" + std::to_string(Unroll) + "x" +
                           std::to_string(Oversub) +
                           (Edges == d::WindowEdges::inline_ ? "-inline" : Edges == d::WindowEdges::apart ? "-apart" : "");
  benchmark::RegisterBenchmark(b::name("view-sum", dtype<T>(), shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
    const Windows<T> w(R, C, r0, c0, rows, cols);
    DeviceMatrix<S> out(1, 1, w.a.stream());
    auto op = [&] {
      d::launch_reduce_2d<d::SumReducer<T>, d::ReduceConfig<Threads, Unroll, Oversub, Edges>>(
          w.a.stream(), w.va.data(), rows, cols, w.va.stride(), out.data(), d::CastTo<d::sum_acc_t<T>, S>{});
    };
    op();
    const double got = static_cast<double>(out.to_vector()[0]), want = static_cast<double>(w.va.sum());
    if (!(std::fabs(got - want) <= 1e-5 * std::fabs(want))) return st.SkipWithError("view sum differs from sum()");
    b::time_on_stream(st, w.a.stream().native(), bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// view.transpose() beside A.transpose() on a dense matrix.
template <class T>
void register_transpose(Index R, Index C, Index r0, Index c0, Index rows, Index cols, bool aligned) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  const auto ours = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
      const Windows<T> w(R, C, wr0, wc0, rows, cols);
      DeviceMatrix<T> out = w.va.transpose();
      if (max_diff(out, DeviceMatrix<T>(w.va).transpose()) != 0)
        return st.SkipWithError("view transpose differs from the dense transpose");
      b::time_on_stream(st, w.a.stream().native(), bytes, b::kGBps, [&] { out = w.va.transpose(); });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-transpose", dtype<T>(), sh, "ours").c_str(), ours(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-transpose", dtype<T>(), sh, "ours-aligned").c_str(), ours(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("view-transpose", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols, 1);
    DeviceMatrix<T> out = A.transpose();
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { out = A.transpose(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ view-copy
/// A dense copy of a window (`out = view`, the path of DeviceMatrix(view) and of gemm's padded
/// operands) beside a copy of a dense matrix of the same shape.
template <class T>
void register_copy(Index R, Index C, Index r0, Index c0, Index rows, Index cols, bool aligned) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  const auto ours = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
      const Windows<T> w(R, C, wr0, wc0, rows, cols);
      DeviceMatrix<T> out(rows, cols, w.a.stream());
      out = w.va;
      b::time_on_stream(st, w.a.stream().native(), bytes, b::kGBps, [&] { out = w.va; });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-copy", dtype<T>(), sh, "ours").c_str(), ours(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-copy", dtype<T>(), sh, "ours-aligned").c_str(), ours(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  // The same windows through cudaMemcpy2DAsync (which copy_rows takes for aligned rows).
  const auto memcpy2d = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
    const Windows<T> w(R, C, wr0, wc0, rows, cols);
    DeviceMatrix<T> out(rows, cols, w.a.stream());
    const cudaStream_t s = w.a.stream().native();
    b::time_on_stream(st, s, bytes, b::kGBps, [&] {
      cudaMemcpy2DAsync(out.data(), cols * sizeof(T), w.va.data(), w.va.stride() * sizeof(T), cols * sizeof(T), rows,
                        cudaMemcpyDeviceToDevice, s);
    });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-copy", dtype<T>(), sh, "memcpy2d").c_str(), memcpy2d(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-copy", dtype<T>(), sh, "memcpy2d-aligned").c_str(), memcpy2d(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("view-copy", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols, 1);
    DeviceMatrix<T> out(rows, cols, A.stream());
    const cudaStream_t s = A.stream().native();
    const std::size_t n = static_cast<std::size_t>(rows) * cols * sizeof(T);
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { cudaMemcpyAsync(out.data(), A.data(), n, cudaMemcpyDeviceToDevice, s); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ view-gemm
/// view * view (n x n windows of R x C matrices) beside A * B on dense n x n matrices.
template <class T>
void register_gemm(Index R, Index C, Index r0, Index c0, Index n, bool aligned) {
  const double flops = 2.0 * static_cast<double>(n) * n * n;
  const std::string sh = std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n);
  const auto ours = [=](Index wr0, Index wc0) {
    return [=](benchmark::State& st) {
      const Windows<T> w(R, C, wr0, wc0, n, n);
      DeviceMatrix<T> out = w.va * w.vb;
      const DeviceMatrix<T> want = DeviceMatrix<T>(w.va) * DeviceMatrix<T>(w.vb);
      // Both are FP32-accurate products of values in [0.5, 1.5): entries near n, errors near
      // n * 2^-24 each; another kernel may round differently, a wrong one is off by O(1).
      const double scale = static_cast<double>(want.abs().max());
      if (!(max_diff(out, want) <= 1e-4 * scale)) return st.SkipWithError("view * view differs from the dense product");
      b::time_on_stream(st, w.a.stream().native(), flops, b::kTflops, [&] { out = w.va * w.vb; });
    };
  };
  benchmark::RegisterBenchmark(b::name("view-gemm", dtype<T>(), sh, "ours").c_str(), ours(r0, c0))
      ->UseManualTime()->Unit(benchmark::kMillisecond);
  if (aligned)
    benchmark::RegisterBenchmark(b::name("view-gemm", dtype<T>(), sh, "ours-aligned").c_str(), ours(0, 0))
        ->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("view-gemm", dtype<T>(), sh, "dense").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(n, n, 1);
    const auto B = random_matrix<T>(n, n, 2);
    DeviceMatrix<T> out = A * B;
    b::time_on_stream(st, A.stream().native(), flops, b::kTflops, [&] { out = A * B; });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
}  // namespace

int main(int argc, char** argv) {
  constexpr Index kBig = 8192, kN = 4096;
  register_add<float>(kBig, kBig, 1, 3, kN, kN, true);
  register_add<std::uint8_t>(16384, 8191, 0, 1, 16384, 4095, false);
  register_sum<float>(kBig, kBig, 1, 3, kN, kN, true);
  register_sum_config<float, 256, 4, 1>(kBig, kBig, 1, 3, kN, kN);  // the default is t512u4x1
  register_sum_config<float, 256, 8, 1>(kBig, kBig, 1, 3, kN, kN);
  register_sum_config<float, 256, 2, 1>(kBig, kBig, 1, 3, kN, kN);
  register_sum_config<float, 256, 4, 2>(kBig, kBig, 1, 3, kN, kN);
  register_sum<std::uint8_t>(16384, 8191, 0, 1, 16384, 4095, false);  // odd stride: every row head offset
  {  // u8: the edges apart (the default) beside inline (the kernel before), and other shapes of each
    using E = devmat::detail::WindowEdges;
    register_sum_config<std::uint8_t, 512, 4, 1, E::inline_>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 256, 4, 1, E::inline_>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 512, 8, 1, E::inline_>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 256, 4, 1>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 512, 8, 1>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 512, 2, 1>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<std::uint8_t, 512, 4, 2>(16384, 8191, 0, 1, 16384, 4095);
    register_sum_config<float, 512, 4, 1, E::apart>(kBig, kBig, 1, 3, kN, kN);
  }
  register_transpose<float>(kBig, kBig, 1, 3, kN, kN, true);
  register_copy<float>(kBig, kBig, 1, 3, kN, kN, true);
  register_copy<std::uint8_t>(16384, 8191, 0, 1, 16384, 4095, false);
  register_gemm<float>(kBig, kBig, 1, 3, kN, true);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
