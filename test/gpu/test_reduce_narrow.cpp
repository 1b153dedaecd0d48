// Row and column sums of narrow (few columns, many rows) and short-wide matrices: every kernel
// configuration under trial (dispatch/reduce.cuh's NarrowTrials, which bench_reduce times as
// "ours-<name>"), called through the same launchers, and the public row_sums/col_sums that
// choose among them; against exact integer and long-double references, on shapes that break
// each kernel's tiling (a tile of whole rows, a chunk period of cols), dense windows at unaligned offsets and strided views, into poisoned outputs.
#include "support/reduce_ref.hpp"
#include "support/reduce_trials.hpp"
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

/// How many of the `lines` sums in `got` are wrong: line l is the `len` values at
/// h + l * line_step, stride apart (a row: line_step = ld, stride 1; a column: 1 and ld).
template <class T, class S>
Index bad_sums(const std::vector<S>& got, const T* h, Index lines, Index line_step, Index len, Index stride) {
  Index bad = 0;
  for (Index l = 0; l < lines; ++l) {
    const S g = got[static_cast<std::size_t>(l)];
    if constexpr (std::is_integral_v<T>) {
      bad += g != ref_int_sum(h + l * line_step, len, stride);
    } else {
      const auto [s, m] = ref_sum(h + l * line_step, len, stride);
      bad += !sum_close(g, s, m, len);
    }
  }
  return bad;
}

/// Runs every trial that takes the rows x cols window at d (host copy at h, both ld elements
/// between row starts) into a poisoned output, twice, and checks its sums and that the two
/// runs agree bit for bit. `kinds`: which trials (rows, columns). Returns how many ran.
template <class T>
int check_trials(const Stream& stream, const T* d, const T* h, Index rows, Index cols, Index ld, bool row_trials,
                 bool col_trials) {
  using S = sum_t<T>;
  int ran = 0;
  for (int i = 0; i < narrow_trial_count<T>(); ++i) {
    const bool is_row = narrow_trial_row_sums<T>(i);
    if ((is_row && !row_trials) || (!is_row && !col_trials)) continue;
    if (!narrow_trial_takes<T>(i, d, rows, cols, ld)) continue;
    CAPTURE(narrow_trial_name<T>(i));
    const Index n = is_row ? rows : cols;
    auto out = DeviceMatrix<S>::constant(n, 1, poison_value<S>(), stream);
    auto again = DeviceMatrix<S>::constant(n, 1, poison_value<S>(), stream);
    narrow_trial<T>(i, stream, d, rows, cols, ld, out.data());
    narrow_trial<T>(i, stream, d, rows, cols, ld, again.data());
    const std::vector<S> got = out.to_vector(), got2 = again.to_vector();
    const Index bad = is_row ? bad_sums(got, h, rows, ld, cols, 1) : bad_sums(got, h, cols, 1, rows, ld);
    CHECK(bad == 0);
    CHECK(std::memcmp(got.data(), got2.data(), got.size() * sizeof(S)) == 0);
    ++ran;
  }
  return ran;
}

/// The public row_sums and col_sums of view v (host copy at h, ld elements between row starts).
template <class T>
void check_public(const Stream& stream, const MatrixView<const T>& v, const T* h, Index ld) {
  using S = sum_t<T>;
  const Index r = v.rows(), c = v.cols();
  poison_next<S>(r, 1, stream);
  const std::vector<S> rs = v.row_sums().to_vector();
  REQUIRE(static_cast<Index>(rs.size()) == r);
  CHECK(bad_sums(rs, h, r, ld, c, 1) == 0);
  poison_next<S>(1, c, stream);
  const std::vector<S> cs = v.col_sums().to_vector();
  REQUIRE(static_cast<Index>(cs.size()) == c);
  CHECK(bad_sums(cs, h, c, 1, r, ld) == 0);
}

// 203: f32 rows of 50.75 chunks, off 16-byte boundaries, which the cp.async ring takes with two
// lanes a row by default (ours-piped128s2l2).
const std::vector<Index> kNarrowCols = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 67, 127, 129, 203};

}  // namespace

TEMPLATE_TEST_CASE("narrow trials: dense matrices of few columns, rows across their tiles", "[reduce][narrow]", float,
                   double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // Row tiles are 128 or 256 threads times k rows (1280 rows of 3 f32 at 16 KiB); the flat
  // column kernel's period is cols / gcd(cols, 1024 or 4096) vectors.
  std::vector<Index> rows_list = {1, 2, 3, 31, 33, 127, 255, 256, 257, 1279, 1280, 1281, 4099, 5377, 12289, 65537};
  std::vector<Index> cols_list = kNarrowCols;
  if (under_sanitizer()) {  // every launch is checked, many times slower: fewer shapes
    rows_list = {1, 31, 257, 1281, 4099};
    cols_list = {1, 3, 4, 16, 17, 33, 67, 129, 203};
  }
  for (Index c : cols_list) {
    for (Index r : rows_list) {
      CAPTURE(shape(r, c));
      const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
      const auto a = to_device(h, stream);
      const int ran = check_trials<T>(stream, a.data(), h.data(), r, c, c, true, true);
      CHECK(ran >= 1);  // every dense window of up to 256 columns is taken by the flat column kernel
      check_public<T>(stream, a.view(), h.data(), c);
    }
  }
}

TEMPLATE_TEST_CASE("narrow trials: a million rows and more", "[reduce][narrow]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  const Index r = under_sanitizer() ? 100003 : 1000003;
  for (Index c : {Index(3), Index(16), Index(33), Index(67)}) {
    CAPTURE(shape(r, c));
    const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    // Every row trial that takes the shape is checked; the staged ones hold rows of up to 48 KiB
    // / threads bytes (8-byte elements: at most 47 columns, fewer than 67).
    const int rows_ran = check_trials<T>(stream, a.data(), h.data(), r, c, c, true, false);
    CHECK(rows_ran >= (sizeof(T) == 8 && c > 47 ? 0 : 1));
    // The flat column kernels.
    int ran = 0;
    for (int i = 0; i < narrow_trial_count<T>(); ++i) {
      if (narrow_trial_row_sums<T>(i) || std::string(narrow_trial_name<T>(i)).find("flat") == std::string::npos) continue;
      if (!narrow_trial_takes<T>(i, a.data(), r, c, c)) continue;
      CAPTURE(narrow_trial_name<T>(i));
      auto out = DeviceMatrix<sum_t<T>>::constant(c, 1, poison_value<sum_t<T>>(), stream);
      narrow_trial<T>(i, stream, a.data(), r, c, c, out.data());
      CHECK(bad_sums(out.to_vector(), h.data(), c, 1, r, c) == 0);
      ++ran;
    }
    CHECK(ran >= 1);
    check_public<T>(stream, a.view(), h.data(), c);
  }
}

TEMPLATE_TEST_CASE("narrow trials: short-wide matrices, aligned and not", "[reduce][narrow]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // The public column sums' wide kernels (a lane per vector of columns) and the flat kernel where
  // the columns are few: cols around a warp's 128 f32 columns, primes, long rows.
  std::vector<Index> cols_list = {1, 3, 4, 5, 31, 127, 128, 129, 255, 257, 4097, 100003, 1000003};
  std::vector<Index> rows_list = {1, 2, 3, 5, 16, 33, 67};
  if (under_sanitizer()) {
    cols_list = {1, 5, 129, 4097, 100003};
    rows_list = {1, 3, 67};
  }
  for (Index r : rows_list) {
    for (Index c : cols_list) {
      if (c > 100003 && r != 1 && r != 3 && r != 67) continue;  // the longest rows: a few heights
      CAPTURE(shape(r, c));
      const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
      const auto a = to_device(h, stream);
      check_trials<T>(stream, a.data(), h.data(), r, c, c, c <= 129, true);
      check_public<T>(stream, a.view(), h.data(), c);
    }
  }
}

TEMPLATE_TEST_CASE("narrow trials: windows of a parent, dense at unaligned offsets and strided", "[reduce][narrow][views]",
                   float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // Parents with odd, even and aligned widths; windows of whole rows from an odd row (dense,
  // the start off 16 bytes unless the width is), and strided windows at odd column offsets.
  for (auto [R, C] : std::vector<std::pair<Index, Index>>{
           {4099, 3}, {3001, 17}, {2003, 67}, {1031, 16}, {67, 4099}, {5, 100003}, {33, 1031}, {300, 129}}) {
    const HostMatrix<T> h = random_matrix<T>(R, C, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    const std::vector<std::array<Index, 4>> windows = {
        {1, 0, R - 1, C}, {R / 3, 0, R - R / 3 - 1, C}, {R - 1, 0, 1, C},   // dense: whole rows
        {0, 1, R, C - 1}, {1, 3, R - 2, C - 4}, {R / 2, C / 3, (R + 1) / 2, C / 2}};  // strided
    for (const auto& w : windows) {
      if (w[2] < 1 || w[3] < 1) continue;
      CAPTURE(shape(R, C), w[0], w[1], w[2], w[3]);
      const MatrixView<const T> v = a.block(w[0], w[1], w[2], w[3]);
      const T* hw = h.data() + w[0] * C + w[1];
      const bool dense = w[3] == C || w[2] == 1;
      // A dense-only kernel must refuse a strided window.
      for (int i = 0; i < narrow_trial_count<T>(); ++i) {
        const std::string name = narrow_trial_name<T>(i);
        if (!dense && (name.find("staged") != std::string::npos || name.find("flat") != std::string::npos))
          CHECK_FALSE(narrow_trial_takes<T>(i, v.data(), w[2], w[3], C));
      }
      check_trials<T>(stream, v.data(), hw, w[2], w[3], C, true, true);
      check_public<T>(stream, v, hw, C);
    }
    CHECK(to_eigen(a) == h);  // the parent is intact
  }
}

TEMPLATE_TEST_CASE("column sums of unaligned rows: every start offset, strip and row-chunk edges",
                   "[reduce][narrow][views]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // The short-wide kernel (ours-wide-b64m4): blocks of 256 threads of 4 vectors of at most 4
  // bytes (1024 V columns a block), or one vector of 8 or 16 bytes; 4 to 16 rows in flight. The
  // tiles (ours-v1). Windows of an odd-width parent at every column offset within a vector, so
  // each row starts at another offset (every offset within a word for bytes).
  constexpr Index V = sizeof(T) == 1 ? 4 : 16 / static_cast<Index>(sizeof(T));
  constexpr Index W = 16 / static_cast<Index>(sizeof(T));
  std::vector<Index> cols_list = {1, V - 1, V + 1, 15, 17, 127 * V - 1, 127 * V + 1, 255 * V - 1, 255 * V,
                                  255 * V + 1, 511 * V + 1, 1021, 1025, 128 * W - 1, 128 * W + 1, 256 * W - 1,
                                  256 * W, 256 * W + 1, 512 * W + 3, 4095, 4097};
  std::vector<Index> rows_list = {1, 2, 5, 15, 16, 17, 31, 32, 33, 64, 65, 1000};
  if (under_sanitizer()) {
    cols_list = {1, V + 1, 17, 255 * V + 1, 1021, 256 * W + 1, 4097};
    rows_list = {1, 5, 17, 65};
  }
  for (Index c : cols_list) {
    for (Index r : rows_list) {
      const Index C = c + V + 1;  // an odd-width parent (ld) unless V divides it
      const HostMatrix<T> h = random_matrix<T>(r + 1, C, lo<T>(), hi<T>());
      const auto a = to_device(h, stream);
      for (Index off = 0; off < V; ++off) {
        CAPTURE(shape(r, c), C, off);
        const MatrixView<const T> v = a.block(1, off, r, c);
        const T* hw = h.data() + C + off;
        // Every column trial that takes the window: the short-wide kernel and the tiles take any
        // (one row: the flat kernels too).
        CHECK(check_trials<T>(stream, v.data(), hw, r, c, C, false, true) >= 2);
        check_public<T>(stream, v, hw, C);
      }
      CHECK(to_eigen(a) == h);  // the parent is intact
    }
  }
}

TEMPLATE_TEST_CASE("column sums of tall unaligned windows of 4- and 8-byte elements: row chunks, strips, phases",
                   "[reduce][narrow][views][phase]", float, double, std::int32_t) {
  // col_sums_phase_kernel ("ours-phase-x*", and the public col_sums of such windows past the
  // short-wide ones): windows whose rows start at every phase pattern (ld 1, 2 or 3 elements off
  // a vector, the start off it), tall enough to be cut into several chunks of rows, wide enough
  // for several strips of a block's columns.
  using T = TestType;
  const Stream stream = Stream::per_thread();
  std::vector<std::array<Index, 4>> shapes = {// rows, cols, parent width, column offset
                                              {20011, 1001, 1003, 1}, {5003, 4001, 4001, 0}, {4099, 2000, 2002, 2},
                                              {65537, 37, 40, 3},     {3001, 3001, 3004, 0}, {1031, 129, 131, 1}};
  if (under_sanitizer()) shapes = {{4099, 1001, 1003, 1}, {1031, 129, 131, 1}};
  for (const auto& [r, c, C, off] : shapes) {
    CAPTURE(shape(r, c), C, off);
    const HostMatrix<T> h = random_matrix<T>(r, C, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    const MatrixView<const T> v = a.block(0, off, r, c);
    const T* hw = h.data() + off;
    CHECK(check_trials<T>(stream, v.data(), hw, r, c, C, false, true) >= 6);  // the tiles and the five phase trials
    check_public<T>(stream, v, hw, C);
    CHECK(to_eigen(a) == h);  // the parent is intact
  }
}

TEST_CASE("u8 column sums by aligned chunks: every offset within 16 bytes, warp strips, flushes, row chunks",
          "[reduce][narrow][views][bytes]") {
  // col_sums_bytes_kernel ("ours-bytes-u*", and the public col_sums of u8 windows that are not
  // rows of whole 16-byte vectors): a warp takes 496 columns, 16 a lane, sums bytes in 16-bit
  // lanes flushed every 256 rows of a warp, and where the strips are few takes chunks of at least
  // 256 rows a warp (a warp a strip) or 64 (a block a strip, the public path there).
  // Parents of a multiple of 16 bytes a row (every row of the window at the same offset, off)
  // and of an odd width (every row at another); windows from row 1, so the first chunk starts
  // before the window.
  const Stream stream = Stream::per_thread();
  std::vector<Index> cols_list = {1, 16, 17, 495, 496, 497, 993, 4095};
  std::vector<Index> rows_list = {1, 7, 255, 256, 257, 1000};
  std::vector<Index> offs = {0, 1, 7, 8, 15};
  if (under_sanitizer()) {
    cols_list = {17, 497, 4095};
    rows_list = {7, 257};
    offs = {0, 15};
  }
  for (Index c : cols_list) {
    for (Index r : rows_list) {
      for (Index C : {(c + 15 + 15) / 16 * 16, c + 16 + 3}) {
        const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(r + 1, C, lo<std::uint8_t>(), hi<std::uint8_t>());
        const auto a = to_device(h, stream);
        for (Index off : offs) {
          if (off + c > C) continue;
          CAPTURE(shape(r, c), C, off);
          const MatrixView<const std::uint8_t> v = a.block(1, off, r, c);
          const std::uint8_t* hw = h.data() + C + off;
          CHECK(check_trials<std::uint8_t>(stream, v.data(), hw, r, c, C, false, true) >= 3);
          check_public<std::uint8_t>(stream, v, hw, C);
        }
        CHECK(to_eigen(a) == h);  // the parent is intact
      }
    }
  }
}

TEMPLATE_TEST_CASE("row sums of rows of a few chunks: every row offset, tile edges, strided rows",
                   "[reduce][narrow][views]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // The public row sums of rows of 1 to 9 16-byte chunks at any start offset and stride: rows of
  // 3 or 4 chunks take row_sums_butterfly_kernel<4, 1, 2> (tiles of 32 rows, two a warp at a
  // time), dense rows of 5 to 8 whole chunks (5 V, 8 V) and dense rows that are not whole chunks
  // the shared-memory tiles (256 rows a tile and more), the rest the teams.
  constexpr Index V = 16 / static_cast<Index>(sizeof(T));
  std::vector<Index> rows_list = {1, 2, 31, 32, 33, 63, 65, 257, 4097, 100003};
  std::vector<Index> cols_list = {1, V - 1, V, V + 1, 2 * V, 3 * V + 1, 4 * V, 5 * V, 8 * V - 1, 8 * V};
  if (under_sanitizer()) rows_list = {1, 33, 4097};
  for (Index c : cols_list) {
    for (Index r : rows_list) {
      for (Index C : {c, c + 1, c + V}) {  // dense, odd stride, stride a vector wider
        const HostMatrix<T> h = random_matrix<T>(r, C + 1, lo<T>(), hi<T>());
        const auto a = to_device(h, stream);
        for (Index off : {Index(0), Index(1)}) {
          if (off + c > C + 1) continue;
          CAPTURE(shape(r, c), C + 1, off);
          const MatrixView<const T> v = a.block(0, off, r, c);
          check_public<T>(stream, v, h.data() + off, C + 1);
        }
      }
    }
  }
  // Dense matrices of rows of 3 to 8 whole chunks, from the start of a parent and from row 1.
  std::vector<Index> dense_rows = {1, 255, 257, 4099, 100003};
  if (under_sanitizer()) dense_rows = {1, 257, 4099};
  for (Index c : {3 * V, 4 * V, 5 * V, 6 * V, 7 * V, 8 * V}) {
    for (Index r : dense_rows) {
      CAPTURE(shape(r, c));
      const HostMatrix<T> h = random_matrix<T>(r + 1, c, lo<T>(), hi<T>());
      const auto a = to_device(h, stream);
      check_public<T>(stream, a.view(), h.data(), c);
      check_public<T>(stream, a.block(1, 0, r, c), h.data() + c, c);
    }
  }
}

TEMPLATE_TEST_CASE("row sums of rows of whole chunks as one flat stream: grid rounds, warp and unroll tails",
                   "[reduce][narrow][rowflat]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // row_sums_flat_kernel: rows of C = 1, 2, 4, 8 chunks of 16 bytes (16: refused), a row's chunks
  // in C adjacent lanes; a grid of resident blocks of 256 threads, U = 4, 8, 16 chunks a thread per
  // round: rows that end inside a warp, inside a round, and after several rounds.
  constexpr Index V = 16 / static_cast<Index>(sizeof(T));
  std::vector<Index> rows_list = {1, 2, 7, 31, 32, 33, 255, 257, 4099, 65537, 1000003};
  if (under_sanitizer()) rows_list = {1, 33, 4099};
  using S = sum_t<T>;
  for (Index chunks : {Index(1), Index(2), Index(4), Index(8), Index(16)}) {
    const Index c = chunks * V;
    std::vector<Index> rs = rows_list;
    if (!under_sanitizer() && chunks <= 2) rs.push_back(5000011);  // several grid rounds of every U
    for (Index r : rs) {
      CAPTURE(shape(r, c));
      const HostMatrix<T> h = random_matrix<T>(r, c, lo<T>(), hi<T>());
      const auto a = to_device(h, stream);
      REQUIRE(reinterpret_cast<std::uintptr_t>(a.data()) % 16 == 0);
      int ran = 0;
      for (int i = 0; i < narrow_trial_count<T>(); ++i) {
        const std::string name = narrow_trial_name<T>(i);
        if (name.find("rowflat") == std::string::npos) continue;
        CAPTURE(name);
        const bool takes = narrow_trial_takes<T>(i, a.data(), r, c, c);
        CHECK(takes == (chunks <= 8));
        // Refused: a start off 16 bytes, rows that are not whole chunks, a strided window.
        if (r >= 2) CHECK_FALSE(narrow_trial_takes<T>(i, a.data() + 1, r - 1, c, c));
        if (c >= 2) CHECK_FALSE(narrow_trial_takes<T>(i, a.data(), r, c - 1, c - 1));
        if (r >= 2 && c >= 2) CHECK_FALSE(narrow_trial_takes<T>(i, a.data(), r, c / 2, c));
        if (!takes) continue;
        auto out = DeviceMatrix<S>::constant(r, 1, poison_value<S>(), stream);
        auto again = DeviceMatrix<S>::constant(r, 1, poison_value<S>(), stream);
        narrow_trial<T>(i, stream, a.data(), r, c, c, out.data());
        narrow_trial<T>(i, stream, a.data(), r, c, c, again.data());
        const std::vector<S> got = out.to_vector(), got2 = again.to_vector();
        CHECK(bad_sums(got, h.data(), r, c, c, 1) == 0);
        CHECK(std::memcmp(got.data(), got2.data(), got.size() * sizeof(S)) == 0);
        ++ran;
      }
      CHECK(ran == (chunks <= 8 ? 5 : 0));  // u4, u8, u16; l1, l2
      check_public<T>(stream, a.view(), h.data(), c);
    }
  }
}

TEMPLATE_TEST_CASE("row sums of dense rows of 3 elements by whole chunks: group tails, refusals",
                   "[reduce][narrow][rowvec]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream stream = Stream::per_thread();
  // row_sums_vec_kernel: kVec16<T> rows of 3 (4 f32/i32, 16 u8) a thread as 3 whole chunks,
  // blocks of 256 threads; the last thread's partial group from element loads. Doubles: refused
  // (a row of 3 is more than a chunk).
  constexpr Index V = 16 / static_cast<Index>(sizeof(T));
  const bool fits = 3 * sizeof(T) < 16;
  std::vector<Index> rows_list = {1, 2, V - 1, V, V + 1, 256 * V - 1, 256 * V, 256 * V + 1, 4099, 65537, 1000003};
  if (under_sanitizer()) rows_list = {1, V + 1, 256 * V + 1, 4099};
  using S = sum_t<T>;
  for (Index r : rows_list) {
    CAPTURE(shape(r, 3));
    const HostMatrix<T> h = random_matrix<T>(r + 1, 4, lo<T>(), hi<T>());
    const auto a = to_device(h, stream);
    REQUIRE(reinterpret_cast<std::uintptr_t>(a.data()) % 16 == 0);
    int ran = 0;
    for (int i = 0; i < narrow_trial_count<T>(); ++i) {
      if (narrow_trial_name<T>(i) != std::string("ours-rowvec")) continue;
      // Refused: rows of 4, a start off 16 bytes, a strided window.
      CHECK_FALSE(narrow_trial_takes<T>(i, a.data(), r, 4, 4));
      CHECK_FALSE(narrow_trial_takes<T>(i, a.data() + 1, r, 3, 3));
      if (r >= 2) CHECK_FALSE(narrow_trial_takes<T>(i, a.data(), r, 3, 4));
      CHECK(narrow_trial_takes<T>(i, a.data(), r, 3, 3) == fits);
      if (!fits) continue;
      // The parent's first 3 r elements as a dense r x 3 matrix.
      auto out = DeviceMatrix<S>::constant(r, 1, poison_value<S>(), stream);
      auto again = DeviceMatrix<S>::constant(r, 1, poison_value<S>(), stream);
      narrow_trial<T>(i, stream, a.data(), r, 3, 3, out.data());
      narrow_trial<T>(i, stream, a.data(), r, 3, 3, again.data());
      const std::vector<S> got = out.to_vector(), got2 = again.to_vector();
      CHECK(bad_sums(got, h.data(), r, 3, 3, 1) == 0);
      CHECK(std::memcmp(got.data(), got2.data(), got.size() * sizeof(S)) == 0);
      ++ran;
    }
    CHECK(ran == (fits ? 1 : 0));
  }
}
