// transpose(): ours beside a device-to-device copy of the same bytes, plus the other tile
// shapes of dispatch/transpose.cuh (impl "ours-w<W>t<TW>b<BY>") so one run picks the fastest,
// the tile on few-rows shapes instead of the few kernels ("ours-tile"), windows of a larger
// matrix ("transpose-view": ours on the window, read in place, beside a copy of the window's
// bytes), and the alternatives of each default forced (TransposeTrials: the vector tile of any
// alignment "ours-vec-n<vectors>c<column bytes>", for bytes the shift tile "ours-shift-w4b8",
// and the few-rows / few-columns kernels one by one: "ours-chunk...", "ours-regs16",
// "ours-bytes16", "ours-span16" (and their "-o4" forms, 4 blocks an SM), "ours-rows16",
// "ours-rows16-direct", "ours-rows16h", "ours-rows16hs", "ours-rows16e"). GB/s count bytes read
// plus bytes written. Each call is timed on the device, queued behind a spin kernel
// (queued.cuh; since session 33: on an idle stream the public call's host work, its allocation
// and kernel choice, counted too: ours 1-4% under its forced kernel).
// DEVMAT_BENCH_TRANSPOSE_SHAPES adds shapes of the caller's ("u8:4097x4097,f32:999x77": ours, the copy and the trials on each).
#include "queued.cuh"
#include "random.cuh"
#include "support.hpp"

#include "dispatch/transpose.cuh"

#include <devmat/devmat.hpp>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;
using b::dtype;
using b::random_matrix;
namespace d = devmat::detail;

/// Counts positions where out (cols x rows, dense) is not the transpose of in (rows x cols, ld
/// elements between row starts).
template <class T>
__global__ void count_mismatches_kernel(const T* in, Index ld, const T* out, Index rows, Index cols,
                                        unsigned long long* bad) {
  unsigned long long local = 0;
  for (Index i = blockIdx.x * Index(blockDim.x) + threadIdx.x; i < rows * cols; i += Index(gridDim.x) * blockDim.x) {
    const Index r = i / cols, c = i % cols;
    local += in[r * ld + c] != out[c * rows + r];
  }
  if (local) atomicAdd(bad, local);
}

template <class T>
bool is_transpose(const T* in, Index ld, Index rows, Index cols, const DeviceMatrix<T>& out) {
  DeviceMatrix<std::uint64_t> bad = DeviceMatrix<std::uint64_t>::zeros(1, 1, out.stream());
  count_mismatches_kernel<<<1024, 256, 0, out.stream().native()>>>(
      in, ld, out.data(), rows, cols, reinterpret_cast<unsigned long long*>(bad.data()));
  DEVMAT_BENCH_CUDA(cudaGetLastError());
  return out.rows() == cols && out.cols() == rows && bad.to_vector()[0] == 0;
}

template <class T>
bool is_transpose(const DeviceMatrix<T>& in, const DeviceMatrix<T>& out) {
  return is_transpose(in.data(), in.cols(), in.rows(), in.cols(), out);
}

std::string shape_of(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

/// The reference of `op` on a rows x cols shape: a device-to-device copy of the same bytes.
template <class T>
void register_memcpy(const char* op, Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  benchmark::RegisterBenchmark(b::name(op, dtype<T>(), shape_of(rows, cols), "memcpy").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B(cols, rows);
    const cudaStream_t s = A.stream().native();
    b::time_queued(st, s, bytes, b::kGBps, [&] {
      DEVMAT_BENCH_CUDA(cudaMemcpyAsync(B.data(), A.data(), A.size() * sizeof(T), cudaMemcpyDeviceToDevice, s));
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

template <class T>
void register_ours_and_memcpy(Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("transpose", dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B = A.transpose();
    if (!is_transpose(A, B)) return st.SkipWithError("transpose result is wrong");
    b::time_queued(st, A.stream().native(), bytes, b::kGBps, [&] { B = A.transpose(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_memcpy<T>("transpose", rows, cols);
}

/// One tile shape of dispatch/transpose.cuh, launched directly (on shapes its words fit).
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
    auto op = [&] { d::launch_transpose_tile<T, Tile>(A.data(), cols, B.data(), rows, cols, s); };
    op();
    if (!is_transpose(A, B)) return st.SkipWithError("transpose result is wrong");
    b::time_queued(st, s, bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// The default kernels with the few-rows / few-columns kernels turned off (the tile for every
/// shape).
template <class T>
void register_tile_on_few(Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  benchmark::RegisterBenchmark(b::name("transpose", dtype<T>(), shape_of(rows, cols), "ours-tile").c_str(),
                               [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    DeviceMatrix<T> B(cols, rows);
    const cudaStream_t s = A.stream().native();
    auto op = [&] { d::launch_transpose<T>(A.data(), cols, B.data(), rows, cols, s, false); };
    op();
    if (!is_transpose(A, B)) return st.SkipWithError("transpose result is wrong");
    b::time_queued(st, s, bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// The alternatives (dispatch/transpose.cuh's TransposeTrials, impl "ours-vec-n8c128" ...), each
/// on the rows x cols window at (r0, c0) of an R x C matrix (the whole matrix by default),
/// checked before it is timed. The few-rows / few-columns ones ("ours-chunk...", "ours-regs16",
/// "ours-bytes16", "ours-span16") only where those kernels run, the others ("ours-vec...",
/// "ours-shift...") only where they do not: elsewhere each is the default.
template <class T>
void register_trials(Index rows, Index cols, const std::string& op_name = "transpose", Index R = 0, Index C = 0,
                     Index r0 = 0, Index c0 = 0) {
  if (R == 0) R = rows, C = cols;
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const bool few = rows <= d::kTransposeFewMax || cols <= d::kTransposeFewMax;
  for (const d::TransposeTrial<T>& trial : d::TransposeTrials<T>::kAll) {
    const std::string name = trial.name;
    const bool few_trial =
        name.rfind("ours-chunk", 0) == 0 || name.rfind("ours-regs", 0) == 0 || name.rfind("ours-bytes", 0) == 0 ||
        name.rfind("ours-span", 0) == 0 || name.rfind("ours-rows", 0) == 0;
    if (few != few_trial) continue;
    const bool short_side = (rows > d::kTransposeFewMax && rows <= d::kTransposeRunMax) ||
                            (cols > d::kTransposeFewMax && cols <= d::kTransposeRunMax);
    if (name.rfind("ours-run", 0) == 0 && !short_side) continue;  // elsewhere the default
    benchmark::RegisterBenchmark(b::name(op_name, dtype<T>(), shape_of(rows, cols), trial.name).c_str(),
                                 [=](benchmark::State& st) {
      const auto A = random_matrix<T>(R, C);
      DeviceMatrix<T> B(cols, rows);
      const cudaStream_t s = A.stream().native();
      const T* in = A.data() + r0 * C + c0;
      auto op = [&] { trial.launch(in, C, B.data(), rows, cols, s); };
      op();
      if (!is_transpose(in, C, rows, cols, B)) return st.SkipWithError("transpose result is wrong");
      b::time_queued(st, s, bytes, b::kGBps, op);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

/// An unaligned shape: ours and the copy, and the alternatives.
template <class T>
void register_unaligned(Index rows, Index cols) {
  register_ours_and_memcpy<T>(rows, cols);
  register_trials<T>(rows, cols);
}

/// A few rows or a few columns: ours and the copy, the few-rows / few-columns alternatives, and
/// on few rows the tile kernel on the same shape (on few columns it measured 0.12-0.27 of a
/// copy, run V1).
template <class T>
void register_few(Index rows, Index cols) {
  register_ours_and_memcpy<T>(rows, cols);
  if (rows <= d::kTransposeFewMax) register_tile_on_few<T>(rows, cols);
  register_trials<T>(rows, cols);
}

/// transpose() of the rows x cols window at (r0, c0) of an R x C matrix, read in place, beside a
/// device copy of the window's bytes (op "transpose-view", shape the window's).
template <class T>
void register_view(Index R, Index C, Index r0, Index c0, Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(T);
  const std::string sh = shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("transpose-view", dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(R, C);
    const devmat::MatrixView<const T> v = A.block(r0, c0, rows, cols);
    DeviceMatrix<T> B = v.transpose();
    if (!is_transpose(v.data(), C, rows, cols, B)) return st.SkipWithError("transpose result is wrong");
    b::time_queued(st, A.stream().native(), bytes, b::kGBps, [&] { B = v.transpose(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_trials<T>(rows, cols, "transpose-view", R, C, r0, c0);
  register_memcpy<T>("transpose-view", rows, cols);
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

  register_ours_and_memcpy<double>(n, n);
  register_tile<double, 1, 32, 8>(n, n);
  register_tile<double, 2, 32, 8>(n, n);
  register_tile<double, 2, 32, 16>(n, n);

  // Very wide and very tall (1 GiB each).
  register_ours_and_memcpy<float>(64, Index(1) << 22);
  register_ours_and_memcpy<float>(Index(1) << 22, 64);
  register_ours_and_memcpy<std::uint8_t>(4096 + 4, 4096 * 64);  // not a multiple of the 128-byte tile
  register_trials<std::uint8_t>(4096 + 4, 4096 * 64);  // rows of 4-byte words, not 8: the vector tile
  register_trials<std::uint8_t>(n, n);
  register_trials<float>(n, n);

  // The issue's shapes and more: sides off the tile and off 4 bytes (every row unaligned), a few
  // rows or columns (interleaves), a single row (a copy), i32 beside f32.
  register_unaligned<float>(n - 1, n + 1);
  register_unaligned<float>(n + 1, n - 1);
  register_unaligned<std::uint8_t>(n + 1, n - 1);
  register_unaligned<std::uint8_t>(n - 1, n + 1);
  register_unaligned<std::uint8_t>(4097, 65537);
  register_unaligned<std::uint8_t>(65537, 4097);
  register_unaligned<std::uint8_t>(10007, 30011);  // primes: every row and output row off its word
  register_unaligned<float>(10007, 30011);
  register_unaligned<std::uint8_t>(1000003, 67);   // tall, past the few-columns kernels
  register_unaligned<std::uint8_t>(262144, 4100);  // tall and wide: the sector tile (trials: vector tiles in bands)
  // Tall, off every word: the tall vector tile (DefaultTranspose's VecTall) in bands, for bytes
  // and floats.
  register_unaligned<std::uint8_t>(262145, 4101);
  register_unaligned<float>(131071, 4097);
  // Rows of whole 4-byte words but not 8: the 4-byte words' tiles beside the vector tile.
  register_tile<std::uint8_t, 4, 64, 16>(262144, 4100);  // 256 x 256 bytes
  register_tile<std::uint8_t, 4, 32, 8>(262144, 4100);   // 128 x 128 bytes (Mid)
  register_tile<std::uint8_t, 4, 64, 16>(4100, 262144);
  register_unaligned<std::uint8_t>(8192, 8196);  // output rows of whole 32-byte sectors, input rows not
  register_tile<std::uint8_t, 4, 64, 16>(8192, 8196);
  register_unaligned<std::uint8_t>(8196, 8192);  // the other way round
  register_tile<std::uint8_t, 4, 64, 16>(8196, 8192);
  register_unaligned<double>(n - 1, n + 1);
  register_ours_and_memcpy<std::int32_t>(n, n);
  register_unaligned<std::int32_t>(n - 1, n + 1);
  register_few<float>(3, Index(1) << 24);
  register_few<float>(Index(1) << 24, 3);
  register_few<float>(7, 9999991);
  register_few<float>(9999991, 7);
  register_few<float>(2, Index(1) << 25);
  register_few<float>(16, Index(1) << 22);
  register_few<float>(Index(1) << 22, 16);
  register_unaligned<float>(33, 2000003);  // past the few-rows kernels: the tile
  register_unaligned<float>(2000003, 33);
  register_ours_and_memcpy<float>(1, Index(1) << 26);  // a copy
  register_few<std::uint8_t>(3, Index(1) << 26);
  register_few<std::uint8_t>(Index(1) << 26, 3);
  register_few<std::uint8_t>(5, 40000001);
  register_few<std::uint8_t>(40000001, 5);
  register_few<std::uint8_t>(16, Index(1) << 24);
  register_few<std::uint8_t>(Index(1) << 24, 16);
  register_few<std::uint8_t>(12, Index(1) << 24);  // 9 to 15 rows: "ours-rows16h" and "ours-rows16e"
  register_few<std::uint8_t>(9, Index(1) << 24);   // against "ours-rows16", even and odd row counts
  register_few<std::uint8_t>(8, Index(1) << 24);  // the register kernels' largest few-rows side for bytes
  for (Index r : {10, 11, 13, 14, 15}) register_few<std::uint8_t>(r, Index(1) << 24);  // the rest of 8 .. 16
  register_few<float>(8, Index(1) << 24);         // and for 4 bytes, where the 8 KiB chunk is taken
  register_few<float>(Index(1) << 24, 8);         // the register kernels' largest few-columns side for 4 bytes
  register_few<double>(3, Index(1) << 23);
  register_few<double>(Index(1) << 23, 3);

  // One side of 17 to 127 elements (the run kernels where they won, else the tiles): odd
  // counts with rows off their words, and counts of whole 8-byte words on dense 16-byte rows.
  for (Index r : {17, 24, 31, 40, 63, 100, 127}) {
    const Index n_u8 = (Index(1) << 26) / r;
    register_unaligned<std::uint8_t>(r, r % 2 ? n_u8 | 1 : n_u8 / 16 * 16);
    register_unaligned<std::uint8_t>(r % 2 ? n_u8 | 1 : n_u8 / 16 * 16, r);
  }
  for (Index r : {17, 24, 31, 40, 63}) {
    const Index n_f = (Index(1) << 24) / r;
    register_unaligned<float>(r, r % 2 ? n_f | 1 : n_f / 16 * 16);
    register_unaligned<float>(r % 2 ? n_f | 1 : n_f / 16 * 16, r);
  }
  register_view<std::uint8_t>(32, (Index(1) << 21) + 7, 1, 3, 24, Index(1) << 21);  // 24 rows through a stride

  // Windows whose rows all start unaligned (odd offset and stride).
  register_view<float>(n, n, 1, 3, n - 2, n - 5);
  register_view<double>(n, n, 1, 3, n - 2, n - 5);
  register_view<std::uint8_t>(n, n + 1, 1, 3, n - 2, n - 5);
  register_view<std::uint8_t>(8, 40000001, 1, 3, 5, 40000001 - 5);  // few rows through a stride
  // Few columns through a stride: each row's bytes are 5 of 7 (f32: 3 of 5), so the copy of the
  // window's bytes reads less than any strided read can (ratio at most about 0.83 and 0.75).
  register_view<std::uint8_t>(Index(1) << 24, 7, 0, 1, Index(1) << 24, 5);
  register_view<float>(Index(1) << 24, 5, 0, 1, Index(1) << 24, 3);
  // Few byte columns off their vectors that the span kernel takes by default: 12 of 16 (ratio at
  // most about 0.86), and dense rows of 5 from an input off its vector (row 1).
  register_view<std::uint8_t>(Index(1) << 24, 16, 0, 2, Index(1) << 24, 12);
  register_view<std::uint8_t>(Index(1) << 24, 5, 1, 0, (Index(1) << 24) - 1, 5);

  // Shapes from the environment, for checking shapes that are in no file of the project:
  // DEVMAT_BENCH_TRANSPOSE_SHAPES="u8:4096x262144,f32:999x77" (ours, the copy and the trials).
  if (const char* extra = std::getenv("DEVMAT_BENCH_TRANSPOSE_SHAPES")) {
    std::istringstream list(extra);
    std::string item;
    while (std::getline(list, item, ',')) {
      const auto colon = item.find(':'), x = item.find('x');
      if (colon == std::string::npos || x == std::string::npos || x < colon) continue;
      const std::string type = item.substr(0, colon);
      const Index r = std::stoll(item.substr(colon + 1, x - colon - 1)), c = std::stoll(item.substr(x + 1));
      if (type == "u8") register_unaligned<std::uint8_t>(r, c);
      else if (type == "f32") register_unaligned<float>(r, c);
      else if (type == "f64") register_unaligned<double>(r, c);
    }
  }

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
