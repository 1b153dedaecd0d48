// col_sums_funnel_kernel (kernels/reduce.cuh: column sums of rows at any 16-byte offset, a
// thread per 16 bytes of columns, each row's two aligned chunks funnelled into its columns) run
// on the CPU through the CUDA emulation (expr_emu/), exact against plain column sums: integer
// elements (exact sums), and floats of small integer values (exact in the double accumulator).
// Windows of a parent at every column offset within 16 bytes, dense and with odd strides, each
// ending on the last byte before an inaccessible page (a read past the window's last element
// faults); every element outside the window poisoned with a huge value (a wrong lane picked up
// shows in the sums); the output inside a poisoned buffer whose guards must stay poisoned; row
// chunks (partials) of every length around the rows in flight, strips around a block.
// row_sums_scan_kernel (kernels/reduce_narrow.cuh: row sums of a dense matrix as one flat stream
// a warp, rows closed by a segmented scan over the lanes) the same way: every start offset within
// 16 bytes, rows of E .. a few E elements (E = K V, the fewest it takes), segments of 1 row to
// all rows, more segments than warps, against exact sums, poisoned output guards.
// row_sums_flat_kernel (kernels/reduce_narrow.cuh: dense rows of 1, 2, 4, 8 whole chunks as one
// flat stream, a row's chunks in adjacent lanes) on matrices that end before an inaccessible
// page: rows ending inside a warp, a round, after several rounds of the grid, exact sums.
// col_sums_wide_kernel (kernels/reduce.cuh: a thread per M vectors of columns down every row of
// a short-wide window) the same way: rows around its U in flight, columns ending inside a
// thread's M vectors and on block edges, dense and strided, the window's end before the page.

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"
#include "emu_guarded.hpp"

#include "kernels/reduce.cuh"
#include "kernels/reduce_narrow.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
using emu::GuardedBytes;

/// Column sums of the rows x cols window at column c0 of a parent of ld >= c0 + cols elements a
/// row, by col_sums_funnel_kernel<T, Threads, U> with row chunks of chunk_rows rows (the partials
/// then summed here in chunk order, as col_chunks_kernel does), against exact sums.
template <class T, int Threads, int U>
void check_funnel(Index rows, Index cols, Index ld, Index c0, Index chunk_rows) {
  CAPTURE(sizeof(T), Threads, U, rows, cols, ld, c0, chunk_rows);
  using Acc = d::sum_acc_t<T>;
  using Fin = d::CastTo<Acc, Acc>;
  constexpr Index V = d::kVec16<T>;
  // The buffer's end is the window's last element, so the parent starts wherever that puts it
  // within 16 bytes (as a view into a larger allocation), c0 elements before the window's first
  // row, V poisoned elements before it (the 16 bytes around a row's start that the GPU may read).
  const Index elems = (rows - 1) * ld + c0 + cols;
  const Index lead = V;
  GuardedBytes buf(static_cast<std::size_t>(elems + lead) * sizeof(T));
  T* parent = reinterpret_cast<T*>(buf.data()) + lead;
  const T poison = static_cast<T>(std::is_same_v<T, std::uint8_t> ? 200 : 1 << 20);
  for (Index e = -lead; e < elems; ++e) parent[e] = poison;
  std::uniform_int_distribution<int> dist(0, 100);
  std::vector<Acc> want(static_cast<std::size_t>(cols), Acc(0));
  const T* in = parent + c0;
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      parent[c0 + r * ld + c] = v;
      want[static_cast<std::size_t>(c)] += static_cast<Acc>(v);
    }

  const Index strips = (cols + V * Threads - 1) / (V * Threads);
  const Index chunks = (rows + chunk_rows - 1) / chunk_rows;
  constexpr Index kGuard = 8;
  const Acc acc_poison = static_cast<Acc>(-12345);
  // Partials at a 16-byte boundary plus `at` elements (0 or 1: aligned and unaligned stores).
  for (Index at : {Index(0), Index(1)}) {
    std::vector<Acc> out_buf(static_cast<std::size_t>(chunks * cols + at + 2 * kGuard + 2), acc_poison);
    Acc* aligned = reinterpret_cast<Acc*>((reinterpret_cast<std::uintptr_t>(out_buf.data() + kGuard) + 15) & ~std::uintptr_t(15));
    Acc* out = aligned + at;
    emu::launch(dim3(static_cast<unsigned>(strips * chunks)), dim3(Threads), [&] {
      d::col_sums_funnel_kernel<T, Threads, U, Fin>(in, rows, cols, ld, strips, chunk_rows, out, Fin{});
    });
    Index bad = 0, guards = 0;
    for (Index c = 0; c < cols; ++c) {
      Acc s = Acc(0);
      for (Index k = 0; k < chunks; ++k) s += out[k * cols + c];
      bad += s != want[static_cast<std::size_t>(c)];
    }
    for (Index e = 0; e < static_cast<Index>(out_buf.size()); ++e) {
      const Index o = (out_buf.data() + e) - out;
      if (o < 0 || o >= chunks * cols) guards += out_buf[static_cast<std::size_t>(e)] != acc_poison;
    }
    CHECK(bad == 0);
    CHECK(guards == 0);
  }
}

/// Every column offset within 16 bytes, dense (ld == cols, then c0 = 0 and rows start at every
/// offset in turn unless V divides cols) and strided (ld = cols + an odd gap).
template <class T, int Threads, int U>
void check_shapes(const std::vector<Index>& rows_list, const std::vector<Index>& cols_list) {
  constexpr Index V = d::kVec16<T>;
  for (Index r : rows_list)
    for (Index c : cols_list) {
      for (Index chunk_rows : {r, (r + 1) / 2, Index(U) + 1, Index(1)}) {
        if (chunk_rows < 1) continue;
        check_funnel<T, Threads, U>(r, c, c, 0, chunk_rows);
        for (Index c0 = 0; c0 < V; ++c0) check_funnel<T, Threads, U>(r, c, c + c0 + 2 * (c % 3) + 1, c0, chunk_rows);
      }
    }
}
}  // namespace

namespace {
/// Row sums of a dense rows x cols matrix followed by `pad` poisoned elements and then an
/// inaccessible page (pad 0 .. V - 1 puts the start at every offset within 16 bytes; pad 0 makes
/// a read past the last element fault), V poisoned elements before it, by
/// row_sums_scan_kernel<T, K, U> with segments of seg_rows rows on `blocks` blocks of 256
/// threads, against exact sums.
template <class T, int K, int U>
void check_scan(Index rows, Index cols, Index pad, Index seg_rows, unsigned blocks) {
  CAPTURE(sizeof(T), K, U, rows, cols, pad, seg_rows, blocks);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;  // the kernel stores any Out; the library passes sum_t<T>
  constexpr Index V = d::kVec16<T>;
  const Index n = rows * cols;
  GuardedBytes buf(static_cast<std::size_t>(V + n + pad) * sizeof(T));
  T* all = reinterpret_cast<T*>(buf.data());
  const T poison = static_cast<T>(std::is_same_v<T, std::uint8_t> ? 200 : 1 << 20);
  for (Index e = 0; e < V + n + pad; ++e) all[e] = poison;
  T* in = all + V;
  std::uniform_int_distribution<int> dist(0, 100);
  std::vector<Acc> want(static_cast<std::size_t>(rows), Acc(0));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      in[r * cols + c] = v;
      want[static_cast<std::size_t>(r)] += static_cast<Acc>(v);
    }
  constexpr Index kGuard = 8;
  const Out out_poison = static_cast<Out>(-12345);
  std::vector<Out> out_buf(static_cast<std::size_t>(rows + 2 * kGuard), out_poison);
  Out* out = out_buf.data() + kGuard;
  emu::launch(dim3(blocks), dim3(256), [&] {
    d::row_sums_scan_kernel<T, Out, K, U>(in, rows, cols, seg_rows, out);
  });
  Index bad = 0, guards = 0;
  for (Index r = 0; r < rows; ++r) bad += out[r] != static_cast<Out>(want[static_cast<std::size_t>(r)]);
  for (Index e = 0; e < kGuard; ++e) guards += (out_buf[static_cast<std::size_t>(e)] != out_poison) +
                                               (out_buf[static_cast<std::size_t>(kGuard + rows + e)] != out_poison);
  CHECK(bad == 0);
  CHECK(guards == 0);
}

template <class T, int K, int U>
void check_scan_shapes(const std::vector<Index>& rows_list) {
  constexpr Index V = d::kVec16<T>, E = K * V;
  for (Index r : rows_list)
    for (Index c : {E, E + 1, 2 * E - 1, 2 * E, 2 * E + 1, 67 * (V / 4 + 1), 32 * E + 3})
      for (Index pad = 0; pad < V; ++pad)
        for (Index seg : {Index(1), Index(3), r}) {
          if (pad == 0 || seg == r) check_scan<T, K, U>(r, c, pad, seg, 1);
          if (pad == 0 && seg < r) check_scan<T, K, U>(r, c, pad, seg, 2);  // segments > warps per grid when seg is 1
        }
}
}  // namespace

namespace {
/// Row sums of a dense matrix of rows of C whole 16-byte chunks that ends on the last byte before
/// an inaccessible page (a read past the last element faults), by row_sums_flat_kernel<T, C, U> on
/// `blocks` blocks of 256 threads, against exact sums, the output inside poisoned guards.
template <class T, int C, int U>
void check_flat(Index rows, unsigned blocks) {
  CAPTURE(sizeof(T), C, U, rows, blocks);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;
  constexpr Index V = d::kVec16<T>;
  const Index cols = Index(C) * V, n = rows * cols;
  GuardedBytes buf(static_cast<std::size_t>(n) * sizeof(T));
  T* in = reinterpret_cast<T*>(buf.data());
  REQUIRE(reinterpret_cast<std::uintptr_t>(in) % 16 == 0);
  std::uniform_int_distribution<int> dist(0, std::is_same_v<T, std::uint8_t> ? 255 : 100);
  std::vector<Acc> want(static_cast<std::size_t>(rows), Acc(0));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      in[r * cols + c] = v;
      want[static_cast<std::size_t>(r)] += static_cast<Acc>(v);
    }
  constexpr Index kGuard = 8;
  const Out out_poison = static_cast<Out>(-12345);
  std::vector<Out> out_buf(static_cast<std::size_t>(rows + 2 * kGuard), out_poison);
  Out* out = out_buf.data() + kGuard;
  emu::launch(dim3(blocks), dim3(256), [&] { d::row_sums_flat_kernel<T, Out, C, U>(in, rows, out); });
  Index bad = 0, guards = 0;
  for (Index r = 0; r < rows; ++r) bad += out[r] != static_cast<Out>(want[static_cast<std::size_t>(r)]);
  for (Index e = 0; e < kGuard; ++e) guards += (out_buf[static_cast<std::size_t>(e)] != out_poison) +
                                               (out_buf[static_cast<std::size_t>(kGuard + rows + e)] != out_poison);
  CHECK(bad == 0);
  CHECK(guards == 0);
}

/// Rows that end inside a warp, a block, a round of U chunks a thread, and after several rounds
/// of the grid (1 block of 256 threads takes 256 U chunks a round), on 1 .. 3 blocks.
template <class T, int C, int U>
void check_flat_shapes() {
  for (Index r : {Index(1), Index(2), Index(31), Index(33), Index(257), Index(256 * U / C + 1), Index(3 * 256 * U / C + 5)})
    for (unsigned blocks : {1u, 2u, 3u}) check_flat<T, C, U>(r, blocks);
}
}  // namespace

TEST_CASE("emulated row_sums_flat_kernel: rows of 1 .. 8 chunks, warp, round and grid tails",
          "[reduce][emulation]") {
  check_flat_shapes<std::uint8_t, 1, 4>();
  check_flat_shapes<std::uint8_t, 2, 8>();
  check_flat_shapes<float, 4, 4>();
  check_flat_shapes<std::int32_t, 4, 2>();
  check_flat_shapes<double, 8, 4>();
  check_flat_shapes<double, 1, 16>();
}

namespace {
/// Column sums of the rows x cols window at column c0 of a parent of ld elements a row (V divides
/// c0 and ld unless rows == 1), the parent ending on the last element of the window's last row
/// before an inaccessible page, every element outside the window poisoned, by
/// col_sums_wide_kernel<T, V, U, Out, M>, against exact sums, the output inside poisoned guards.
template <class T, int V, int U, int M>
void check_wide(Index rows, Index cols, Index ld, Index c0) {
  CAPTURE(sizeof(T), V, U, M, rows, cols, ld, c0);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;
  const Index elems = (rows - 1) * ld + c0 + cols;
  GuardedBytes buf(static_cast<std::size_t>(elems) * sizeof(T));
  T* parent = reinterpret_cast<T*>(buf.data());
  REQUIRE(reinterpret_cast<std::uintptr_t>(parent + c0) % (V * sizeof(T)) == 0);
  const T poison = static_cast<T>(std::is_same_v<T, std::uint8_t> ? 200 : 1 << 20);
  for (Index e = 0; e < elems; ++e) parent[e] = poison;
  std::uniform_int_distribution<int> dist(0, 100);
  std::vector<Acc> want(static_cast<std::size_t>(cols), Acc(0));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      parent[c0 + r * ld + c] = v;
      want[static_cast<std::size_t>(c)] += static_cast<Acc>(v);
    }
  constexpr Index kGuard = 8;
  const Out out_poison = static_cast<Out>(-12345);
  std::vector<Out> out_buf(static_cast<std::size_t>(cols + 2 * kGuard), out_poison);
  Out* out = out_buf.data() + kGuard;
  const auto blocks = static_cast<unsigned>((cols / V + 256 * M - 1) / (256 * M));
  const T* in = parent + c0;
  emu::launch(dim3(blocks), dim3(256), [&] { d::col_sums_wide_kernel<T, V, U, Out, M>(in, rows, cols, ld, out); });
  Index bad = 0, guards = 0;
  for (Index c = 0; c < cols; ++c) bad += out[c] != static_cast<Out>(want[static_cast<std::size_t>(c)]);
  for (Index e = 0; e < kGuard; ++e) guards += (out_buf[static_cast<std::size_t>(e)] != out_poison) +
                                               (out_buf[static_cast<std::size_t>(kGuard + cols + e)] != out_poison);
  CHECK(bad == 0);
  CHECK(guards == 0);
}

/// Rows fewer than, equal to and past U; vectors of columns ending inside a thread's M, inside a
/// block and on a block's edge; dense and strided.
template <class T, int V, int U, int M>
void check_wide_shapes() {
  for (Index r : {Index(1), Index(3), Index(U), Index(U + 1), Index(2 * U + 3)})
    for (Index units : {Index(1), Index(255), Index(256), Index(257), Index(256 * M - 1), Index(256 * M),
                        Index(256 * M + 1), Index(2 * 256 * M + 300)}) {
      const Index cols = units * V;
      check_wide<T, V, U, M>(r, cols, cols, 0);
      check_wide<T, V, U, M>(r, cols, cols + 3 * V, V);
    }
}
}  // namespace

TEST_CASE("emulated col_sums_wide_kernel: M vectors a thread, rows around U, block edges", "[reduce][emulation]") {
  check_wide_shapes<float, 1, 4, 1>();
  check_wide_shapes<float, 1, 4, 4>();
  check_wide_shapes<float, 4, 4, 2>();
  check_wide_shapes<std::uint8_t, 1, 16, 8>();
  check_wide_shapes<double, 1, 8, 4>();
  check_wide_shapes<std::int32_t, 2, 4, 8>();
}

TEST_CASE("emulated row_sums_scan_kernel: rows of E .. 32 E elements at every offset, every segment",
          "[reduce][emulation]") {
  check_scan_shapes<float, 1, 4>({1, 2, 40});
  check_scan_shapes<float, 2, 2>({3, 33});
  check_scan_shapes<std::int32_t, 4, 2>({19});
  check_scan_shapes<double, 2, 2>({1, 21});
  check_scan_shapes<std::uint8_t, 1, 2>({18});
}

TEST_CASE("emulated col_sums_funnel_kernel: f32 and i32 at every offset, strips and row chunks",
          "[reduce][emulation]") {
  // Strips of 32 threads (4 columns each: 128 columns) keep the emulation quick; the kernel's
  // index math does not depend on the block size.
  check_shapes<float, 32, 4>({1, 3, 4, 5, 9}, {1, 2, 3, 4, 5, 127, 128, 129, 257});
  check_shapes<std::int32_t, 64, 2>({1, 2, 7}, {3, 255, 256, 257});
}

TEST_CASE("emulated col_sums_funnel_kernel: f64 and bytes", "[reduce][emulation]") {
  check_shapes<double, 32, 4>({1, 2, 5, 6}, {1, 2, 3, 63, 64, 65});
  check_shapes<std::uint8_t, 32, 4>({1, 3, 5}, {1, 15, 16, 17, 511, 512, 513});
}
