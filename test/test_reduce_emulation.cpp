// Reduction kernels run on the CPU through the CUDA emulation (expr_emu/), against exact sums,
// the output inside poisoned guards. row_sums_flat_kernel (kernels/reduce_narrow.cuh: dense rows
// of 1, 2, 4, 8 whole chunks as one flat stream, a row's chunks in adjacent lanes) on matrices
// that end before an inaccessible page: rows ending inside a warp, a round, after several rounds
// of the grid; row_sums_lines_kernel (the same rows by warp tiles of 32 rows, a warp's sums
// stored as one run) likewise. col_sums_wide_kernel (kernels/reduce.cuh: a thread per M vectors
// of columns down every row of a short-wide window) on windows ending before an inaccessible
// page, every element outside them poisoned: rows around its U in flight, columns ending inside a
// thread's M vectors and on block edges, dense and strided. row_sums_vec_kernel (kernels/reduce_narrow.cuh: dense
// rows of 3, kVec16<T> rows a thread) the same way. row_sums_piped_kernel (dense rows of any width
// through a ring of shared tiles filled by cp.async) on matrices that start off 16 bytes and end
// before an inaccessible page, tiles wrapping the ring several times on 1 .. 3 blocks.

#include <cstdint>
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

using emu::GuardedBytes;

namespace {
/// `n` outputs between kGuard poisoned elements on each side; check() counts the outputs unlike
/// `want` and the guard elements changed, and expects none of either.
template <class Out>
class GuardedOut {
 public:
  static constexpr Index kGuard = 8;
  explicit GuardedOut(Index n) : n_(n), buf_(static_cast<std::size_t>(n + 2 * kGuard), kPoison) {}
  Out* data() { return buf_.data() + kGuard; }
  template <class Acc>
  void check(const std::vector<Acc>& want) const {
    Index bad = 0, guards = 0;
    for (Index i = 0; i < n_; ++i) bad += buf_[static_cast<std::size_t>(kGuard + i)] != static_cast<Out>(want[static_cast<std::size_t>(i)]);
    for (Index e = 0; e < kGuard; ++e)
      guards += (buf_[static_cast<std::size_t>(e)] != kPoison) + (buf_[static_cast<std::size_t>(kGuard + n_ + e)] != kPoison);
    CHECK(bad == 0);
    CHECK(guards == 0);
  }

 private:
  static constexpr Out kPoison = static_cast<Out>(-12345);
  Index n_;
  std::vector<Out> buf_;
};

/// Fills the dense rows x cols `in` with random values (bytes over their whole range) and
/// returns each row's sum.
template <class T>
std::vector<d::sum_acc_t<T>> fill_dense_rows(T* in, Index rows, Index cols) {
  std::uniform_int_distribution<int> dist(0, std::is_same_v<T, std::uint8_t> ? 255 : 100);
  std::vector<d::sum_acc_t<T>> want(static_cast<std::size_t>(rows), d::sum_acc_t<T>(0));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      in[r * cols + c] = v;
      want[static_cast<std::size_t>(r)] += static_cast<d::sum_acc_t<T>>(v);
    }
  return want;
}

/// Sets every element of a parent of ld elements a row up to the last of the rows x cols window
/// at column c0 to `poison`, then the window's to random values in 0 .. hi; returns the column
/// sums of each chunk of chunk_rows rows of the window (chunk k's at k * cols).
template <class T>
std::vector<d::sum_acc_t<T>> fill_window(T* parent, Index rows, Index cols, Index ld, Index c0, T poison, int hi,
                                         Index chunk_rows) {
  using Acc = d::sum_acc_t<T>;
  const Index elems = (rows - 1) * ld + c0 + cols;
  for (Index e = 0; e < elems; ++e) parent[e] = poison;
  std::uniform_int_distribution<int> dist(0, hi);
  const Index chunks = (rows + chunk_rows - 1) / chunk_rows;
  std::vector<Acc> want(static_cast<std::size_t>(chunks * cols), Acc(0));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const T v = static_cast<T>(dist(emu::rng()));
      parent[c0 + r * ld + c] = v;
      want[static_cast<std::size_t>(r / chunk_rows * cols + c)] += static_cast<Acc>(v);
    }
  return want;
}

/// Row sums of a dense matrix of rows of C whole 16-byte chunks that ends on the last byte before
/// an inaccessible page (a read past the last element faults), by row_sums_flat_kernel<T, C, U>
/// (UT == 0) or row_sums_lines_kernel<T, C, UT> on `blocks` blocks of 256 threads,
/// against exact sums, the output inside poisoned guards.
template <class T, int C, int U, int UT = 0>
void check_flat(Index rows, unsigned blocks) {
  CAPTURE(sizeof(T), C, U, UT, rows, blocks);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;
  constexpr Index V = d::kVec16<T>;
  const Index cols = Index(C) * V, n = rows * cols;
  GuardedBytes buf(static_cast<std::size_t>(n) * sizeof(T));
  T* in = reinterpret_cast<T*>(buf.data());
  REQUIRE(reinterpret_cast<std::uintptr_t>(in) % 16 == 0);
  const std::vector<Acc> want = fill_dense_rows(in, rows, cols);
  GuardedOut<Out> out(rows);
  emu::launch(dim3(blocks), dim3(256), [&] {
    if constexpr (UT == 0) d::row_sums_flat_kernel<T, Out, C, U>(in, rows, out.data());
    else d::row_sums_lines_kernel<T, Out, C, UT>(in, rows, out.data());
  });
  out.check(want);
}

/// Rows that end inside a warp, a block, a round of U chunks a thread, and after several rounds
/// of the grid (1 block of 256 threads takes 256 U chunks a round), on 1 .. 3 blocks.
template <class T, int C, int U>
void check_flat_shapes() {
  for (Index r : {Index(1), Index(2), Index(31), Index(33), Index(257), Index(256 * U / C + 1), Index(3 * 256 * U / C + 5)})
    for (unsigned blocks : {1u, 2u, 3u}) check_flat<T, C, U>(r, blocks);
}

/// row_sums_lines_kernel: rows that end inside a warp tile (32 rows), a block's round (8 warps of
/// UT tiles: 256 UT rows) and after several rounds, on 1 .. 3 blocks.
template <class T, int C, int UT>
void check_lines_shapes() {
  for (Index r : {Index(1), Index(7), Index(31), Index(32), Index(33), Index(255), Index(256 * UT + 1),
                  Index(3 * 256 * UT + 37), Index(7 * 256 * UT)})
    for (unsigned blocks : {1u, 2u, 3u}) check_flat<T, C, 0, UT>(r, blocks);
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

TEST_CASE("emulated row_sums_lines_kernel: rows of 1 .. 8 chunks by warp tiles, tile, round and grid tails",
          "[reduce][emulation]") {
  check_lines_shapes<std::uint8_t, 1, 1>();
  check_lines_shapes<std::uint8_t, 2, 2>();
  check_lines_shapes<float, 4, 1>();
  check_lines_shapes<float, 4, 2>();
  check_lines_shapes<std::int32_t, 8, 1>();
  check_lines_shapes<double, 8, 2>();
  check_lines_shapes<double, 1, 2>();
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
  const std::vector<Acc> want = fill_window(parent, rows, cols, ld, c0, poison, 100, rows);
  GuardedOut<Out> out(cols);
  const auto blocks = static_cast<unsigned>((cols / V + 256 * M - 1) / (256 * M));
  const T* in = parent + c0;
  emu::launch(dim3(blocks), dim3(256), [&] { d::col_sums_wide_kernel<T, V, U, Out, M>(in, rows, cols, ld, out.data()); });
  out.check(want);
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
  // The library's configurations (dispatch/reduce.cuh's kColWideM, kColWideU: 64 bytes in flight
  // a thread, 4 vectors of at most 4 bytes, else 1), every vector width of every element type.
  check_wide_shapes<float, 1, 4, 4>();
  check_wide_shapes<float, 2, 8, 1>();
  check_wide_shapes<float, 4, 4, 1>();
  check_wide_shapes<std::int32_t, 1, 4, 4>();
  check_wide_shapes<std::int32_t, 2, 8, 1>();
  check_wide_shapes<double, 1, 8, 1>();
  check_wide_shapes<double, 2, 4, 1>();
  check_wide_shapes<std::uint8_t, 1, 16, 4>();
  check_wide_shapes<std::uint8_t, 2, 8, 4>();
  check_wide_shapes<std::uint8_t, 4, 4, 4>();
  check_wide_shapes<std::uint8_t, 8, 8, 1>();
  check_wide_shapes<std::uint8_t, 16, 4, 1>();
  // Other M and U: rows and vectors in flight the kernel's loops do not assume.
  check_wide_shapes<float, 1, 4, 1>();
  check_wide_shapes<float, 4, 4, 2>();
  check_wide_shapes<std::uint8_t, 1, 16, 8>();
}

namespace {
/// Row sums of a dense matrix of rows of C elements that ends on its last element before an
/// inaccessible page, by row_sums_vec_kernel<T, Out, C> (kVec16<T> rows a thread), against exact
/// sums, the output inside poisoned guards.
template <class T, int C>
void check_vec(Index rows) {
  CAPTURE(sizeof(T), C, rows);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;
  const Index n = rows * C;
  // Whole chunks before the page (so the start is aligned); the elements past n stay unread.
  const Index padded = (n * static_cast<Index>(sizeof(T)) + 15) / 16 * 16;
  GuardedBytes buf(static_cast<std::size_t>(padded));
  T* in = reinterpret_cast<T*>(buf.data());
  REQUIRE(reinterpret_cast<std::uintptr_t>(in) % 16 == 0);
  const std::vector<Acc> want = fill_dense_rows(in, rows, Index(C));
  GuardedOut<Out> out(rows);
  const Index threads = (rows + d::kVec16<T> - 1) / d::kVec16<T>;
  emu::launch(dim3(static_cast<unsigned>((threads + 255) / 256)), dim3(256),
              [&] { d::row_sums_vec_kernel<T, Out, C>(in, rows, out.data()); });
  out.check(want);
}
}  // namespace

TEST_CASE("emulated row_sums_vec_kernel: rows of 3, partial groups, block edges", "[reduce][emulation]") {
  for (Index r : {Index(1), Index(2), Index(3), Index(4), Index(5), Index(15), Index(16), Index(17), Index(1023),
                  Index(1024), Index(1025), Index(4097), Index(4099)}) {
    check_vec<float, 3>(r);
    check_vec<std::int32_t, 3>(r);
    check_vec<std::uint8_t, 3>(r);
  }
}

namespace {
/// Row sums of a dense rows x cols matrix that ends on its last element before an inaccessible
/// page (so that it starts off a 16-byte boundary unless its bytes are whole chunks), by
/// row_sums_piped_kernel<T, Out, Threads, Stages, L> with tiles of tile_rows rows on `blocks`
/// blocks, against exact sums, the output inside poisoned guards.
template <class T, int Threads, int Stages, int L>
void check_piped(Index rows, Index cols, Index tile_rows, unsigned blocks) {
  CAPTURE(sizeof(T), Threads, Stages, L, rows, cols, tile_rows, blocks);
  using Acc = d::sum_acc_t<T>;
  using Out = Acc;
  const Index n = rows * cols;
  GuardedBytes buf(static_cast<std::size_t>(n) * sizeof(T));
  T* in = reinterpret_cast<T*>(buf.data());
  const std::vector<Acc> want = fill_dense_rows(in, rows, cols);
  GuardedOut<Out> out(rows);
  const Index buf_chunks = tile_rows * cols * static_cast<Index>(sizeof(T)) / 16 + 2;
  REQUIRE(Stages * buf_chunks * 16 <= 227 * 1024);
  emu::launch(dim3(blocks), dim3(Threads), [&] {
    d::row_sums_piped_kernel<T, Out, Threads, Stages, L>(in, rows, cols, tile_rows, buf_chunks, out.data());
  });
  out.check(want);
}

template <class T, int Threads, int Stages, int L = 1>
void check_piped_shapes() {
  for (Index cols : {Index(1), Index(2), Index(3), Index(4), Index(5), Index(16), Index(17), Index(64), Index(67)})
    for (Index tile_rows : {Index(Threads / L), Index(2 * Threads / L)})
      for (Index rows : {Index(1), Index(2), tile_rows - 1, tile_rows, tile_rows + 1, 5 * tile_rows + 3,
                         Index(Stages) * 3 * tile_rows + 7})
        if (rows >= 1)  // tiles of one row (32 lanes a row of 32 threads): no row count below it
          for (unsigned blocks : {1u, 2u, 3u}) check_piped<T, Threads, Stages, L>(rows, cols, tile_rows, blocks);
}
}  // namespace

TEST_CASE("emulated row_sums_piped_kernel: unaligned starts and ends, tile and ring edges, lanes a row, 1 .. 3 blocks",
          "[reduce][emulation]") {
  check_piped_shapes<float, 64, 2>();
  check_piped_shapes<float, 32, 3>();
  check_piped_shapes<std::uint8_t, 32, 4>();
  check_piped_shapes<double, 32, 2>();
  check_piped_shapes<std::int32_t, 64, 3>();
  check_piped_shapes<float, 64, 2, 4>();  // L lanes a row: rows shorter and longer than L, passes of 16
  check_piped_shapes<std::uint8_t, 64, 2, 2>();
  check_piped_shapes<double, 64, 2, 8>();
  check_piped_shapes<std::int32_t, 32, 2, 32>();
}

namespace {
/// Column sums of the rows x cols u8 window at column c0 of a parent of ld bytes a row (any
/// alignment), the parent ending on the window's last byte before an inaccessible page, every
/// byte outside the window poisoned (255), by col_sums_bytes_kernel<U, kWY> over `chunks` chunks
/// of rows (written as partials, chunk k at k * cols), against exact sums, inside poisoned guards.
template <int U, int kWY = 1>
void check_bytes(Index rows, Index cols, Index ld, Index c0, Index chunks) {
  CAPTURE(U, kWY, rows, cols, ld, c0, chunks);
  using Acc = d::sum_acc_t<std::uint8_t>;
  const Index elems = (rows - 1) * ld + c0 + cols;
  GuardedBytes buf(static_cast<std::size_t>(elems));
  std::uint8_t* parent = buf.data();
  const Index chunk_rows = (rows + chunks - 1) / chunks;
  const std::vector<Acc> want = fill_window(parent, rows, cols, ld, c0, std::uint8_t(255), 255, chunk_rows);
  REQUIRE(static_cast<Index>(want.size()) == chunks * cols);  // every chunk has rows
  GuardedOut<Acc> out(chunks * cols);
  const Index strips = (cols + d::kColBytesWarpCols - 1) / d::kColBytesWarpCols;
  const Index units = strips * ((rows + chunk_rows - 1) / chunk_rows);  // warps (kWY = 1) or blocks
  const auto blocks = static_cast<unsigned>(kWY == 1 ? (units + 7) / 8 : units);
  emu::launch(dim3(blocks), dim3(d::kColBytesThreads), [&] {
    d::col_sums_bytes_kernel<U, kWY, d::CastTo<Acc, Acc>>(parent + c0, rows, cols, ld, strips, chunk_rows, out.data(),
                                                         d::CastTo<Acc, Acc>{});
  });
  out.check(want);
}
}  // namespace

TEST_CASE("emulated col_sums_bytes_kernel: row offsets, warp and block strips, flushes, chunks, the window's last byte",
          "[reduce][emulation]") {
  // Widths around a warp's 496 columns and a lane's 16; parents whose rows start at every offset
  // within 16 bytes (odd ld) or at one (ld a multiple of 16, the window off it); rows around U and
  // the 256-row flush of the 16-bit lanes; one chunk and several (some warps of the last block idle).
  for (Index cols : {Index(1), Index(15), Index(16), Index(17), Index(495), Index(496), Index(497), Index(1009)})
    for (Index extra : {Index(0), Index(1), Index(16 - cols % 16)})
      for (Index c0 : {Index(0), Index(3), Index(15)}) {
        const Index ld = c0 + cols + extra;
        check_bytes<8>(1, cols, ld, c0, 1);
        check_bytes<8>(9, cols, ld, c0, 1);
        check_bytes<4>(5, cols, ld, c0, 2);
        check_bytes<8, 8>(1, cols, ld, c0, 1);   // a block a strip: warps with no rows
        check_bytes<8, 8>(23, cols, ld, c0, 2);  // 12 and 11 rows: every 8th a warp
      }
  for (Index rows : {Index(255), Index(256), Index(257), Index(600)}) {
    check_bytes<8>(rows, 33, 37, 1, 1);
    check_bytes<16>(rows, 500, 501, 2, 1);
    check_bytes<8>(rows, 17, 17, 0, 3);
  }
  check_bytes<16>(1000, 1000, 1003, 5, 9);  // chunks of 112 rows, 2 strips, 18 warps
  // A block a strip: a warp's 256-row flush (2048 rows of the chunk, and past it), 3 strips.
  check_bytes<8, 8>(2049, 20, 23, 3, 1);
  check_bytes<8, 8>(4200, 1000, 1001, 1, 2);
}

namespace {
/// Column sums of the rows x cols window at column c0 of a parent of ld elements a row (4- or
/// 8-byte T, any alignment), the parent ending on the window's last element, off 16 bytes,
/// before unreadable bytes (ExactReads) and an inaccessible page, every element outside the window poisoned, by col_sums_phase_kernel<T, WX,
/// U> over `chunks` chunks of rows (partials, chunk k at k * cols), against exact sums, inside
/// poisoned guards.
template <class T, int WX, int U>
void check_phase(Index rows, Index cols, Index ld, Index c0, Index chunks) {
  CAPTURE(sizeof(T), WX, U, rows, cols, ld, c0, chunks);
  using Acc = d::sum_acc_t<T>;
  const Index elems = (rows - 1) * ld + c0 + cols;
  // 1 to V - 1 elements past the parent stay mapped but unreadable (ExactReads), so that it ends
  // off 16 bytes: a vector that runs past the window's last element fails inside the page.
  const std::size_t bytes = static_cast<std::size_t>(elems) * sizeof(T);
  const std::size_t slack = sizeof(T) * (1 + static_cast<std::size_t>(rows % (d::kVec16<T> - 1)));
  GuardedBytes buf(bytes + slack);
  const emu::ExactReads exact(buf, bytes);
  T* parent = reinterpret_cast<T*>(buf.data());
  const Index chunk_rows = (rows + chunks - 1) / chunks;
  const std::vector<Acc> want = fill_window(parent, rows, cols, ld, c0, static_cast<T>(1 << 20), 100, chunk_rows);
  const Index real_chunks = (rows + chunk_rows - 1) / chunk_rows;
  GuardedOut<Acc> out(real_chunks * cols);
  const Index strips = (cols + WX * d::kColPhaseWarpCols<T> - 1) / (WX * d::kColPhaseWarpCols<T>);
  emu::launch(dim3(static_cast<unsigned>(strips * real_chunks)), dim3(d::kColPhaseThreads), [&] {
    d::col_sums_phase_kernel<T, WX, U, d::CastTo<Acc, Acc>>(parent + c0, rows, cols, ld, strips, chunk_rows,
                                                            out.data(), d::CastTo<Acc, Acc>{});
  });
  out.check(want);
}

template <class T, int WX, int U>
void check_phase_shapes() {
  constexpr Index V = d::kVec16<T>, kWarp = d::kColPhaseWarpCols<T>;
  // Widths inside a lane's vector, around a warp's 31 vectors and a block's WX warps; parents whose
  // rows start at every phase pattern (ld = 1, 2, 3 mod 4 elements, or a whole vector with the
  // window off it); rows around a group of V, U groups and the warp rows; one chunk and several.
  for (Index cols : {Index(1), V + 1, kWarp - 1, kWarp, kWarp + 1, WX * kWarp - 1, WX * kWarp + 3, 2 * WX * kWarp + 5})
    for (Index extra : {Index(0), Index(1), Index(2), Index(3), V - cols % V})
      for (Index c0 : {Index(0), Index(1), V - 1}) {
        const Index ld = c0 + cols + extra;
        check_phase<T, WX, U>(1, cols, ld, c0, 1);
        check_phase<T, WX, U>(V + 1, cols, ld, c0, 1);
        check_phase<T, WX, U>(37, cols, ld, c0, 2);
        check_phase<T, WX, U>(3 * V * 8 * U + 5, cols, ld, c0, 3);
      }
  check_phase<T, WX, U>(2051, 100, 103, 1, 1);
  check_phase<T, WX, U>(2051, 1000, 1001, 3, 5);
}
}  // namespace

TEST_CASE("emulated col_sums_phase_kernel: phases, lanes past a warp's columns, strips, row groups and chunks",
          "[reduce][emulation]") {
  check_phase_shapes<float, 4, 2>();  // the library's (dispatch/reduce.cuh's kColPhaseWX, kColPhaseU)
  check_phase_shapes<std::int32_t, 4, 2>();
  check_phase_shapes<double, 4, 2>();
  check_phase_shapes<float, 2, 2>();  // the trials' other widths
  check_phase_shapes<float, 8, 2>();
  check_phase_shapes<double, 8, 1>();
  check_phase_shapes<std::int32_t, 1, 3>();
  check_phase_shapes<float, 4, 1>();
}
