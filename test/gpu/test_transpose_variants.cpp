// The transpose kernels forced on every shape where they apply (dispatch/transpose.cuh's
// TransposeTrials, run by name in bench_transpose beside the default; each a default of some
// shapes, forced here on all): exact equality with Eigen on
// shapes around their tile edges (the vector tile's rows and 31-vector columns, the chunks'
// lines) and 16-byte vector edges, on windows at odd offsets and strides (including windows
// that end where their allocation ends, so a read past the window is a memcheck error), into
// outputs at every alignment inside a poisoned buffer whose guards must stay poisoned (no write
// outside the output).
#include "support/transpose_trials.hpp"
#include "support/util.hpp"

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T>
HostMatrix<T> random_values(Index r, Index c) {
  return random_matrix<T>(r, c, std::is_signed_v<T> ? -1000 : 0, std::is_same_v<T, std::uint8_t> ? 255 : 1000);
}

/// Trial i on the rows x cols window at (r0, c0) of `a` (host copy h), into a poisoned buffer at
/// element offset `at`: the window's transpose, and the guards before and after it untouched.
template <class T>
void check_trial(int i, const HostMatrix<T>& h, const DeviceMatrix<T>& a, Index r0, Index c0, Index rows, Index cols,
                 Index at) {
  CAPTURE(transpose_trial_name<T>(i), shape(h.rows(), h.cols()), r0, c0, shape(rows, cols), at);
  constexpr Index kGuard = 40;  // elements after the output (more than a 32-byte sector)
  const Index n = rows * cols;
  DeviceMatrix<T> buf = DeviceMatrix<T>::constant(1, at + n + kGuard, poison_value<T>(), a.stream());
  const MatrixView<const T> v = a.block(r0, c0, rows, cols);
  transpose_trial<T>(i, v.data(), a.cols(), buf.data() + at, rows, cols, a.stream().native());
  const std::vector<T> got = buf.to_vector();
  const HostMatrix<T> want = h.block(r0, c0, rows, cols).transpose();  // cols x rows, row-major
  const T poison = poison_value<T>();
  Index bad = 0, guards = 0;
  for (Index e = 0; e < at + n + kGuard; ++e) {
    const T& g = got[static_cast<std::size_t>(e)];
    if (e < at || e >= at + n) guards += std::memcmp(&g, &poison, sizeof(T)) != 0;
    else bad += g != want.data()[e - at];
  }
  CHECK(bad == 0);
  CHECK(guards == 0);
}

// Sides around the tiles: the byte shift tile's rows (32 words: 128) and columns (31 words:
// 124), odd ones that leave every row off its 16-byte vector, and rows of whole vectors (32, 64,
// 256: every output row starts as far into its vector as the output does). The vec tiles
// (ours-vec-*): rows 16 / 32 / 64 / 128 a tile plus a halo of 16 bytes' worth (2, 4 or 16 rows:
// 15, 16, 17, 145), columns 16 to 256 bytes (u8 80: 79, 81; f32 36: 37; f64 16 and 32: 15, 16,
// 17; 255, 256), past them (449, 495, 497).
const std::vector<Index> kTrialRows = {1, 2, 3, 15, 16, 17, 31, 32, 33, 56, 63, 64, 65, 96, 127, 129, 131,
                                       145, 224, 225, 256, 257, 290, 449};
const std::vector<Index> kTrialCols = {1,   3,   15,  16,  17,  32,  37,  61,  62,  63,  65,  79,  81,  123,
                                       124, 125, 128, 129, 131, 247, 248, 249, 255, 256, 259, 495, 497};
}  // namespace

TEMPLATE_TEST_CASE("transpose kernels under trial equal Eigen's on tile and vector edges", "[transpose][trial]",
                   std::uint8_t, float, std::int32_t, double) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  // Under compute-sanitizer (many times slower) every other side, one past each edge kept.
  const std::vector<Index> sanitizer_rows = {1, 17, 33, 65, 129, 257}, sanitizer_cols = {3, 63, 125, 129, 497};
  const bool short_run = under_sanitizer();
  for (Index r : short_run ? sanitizer_rows : kTrialRows)
    for (Index c : short_run ? sanitizer_cols : kTrialCols) {
      const HostMatrix<T> h = random_values<T>(r, c);
      const auto a = to_device(h, s);
      for (int i = 0; i < transpose_trial_count<T>(); ++i) {
        check_trial<T>(i, h, a, 0, 0, r, c, 0);
        check_trial<T>(i, h, a, 0, 0, r, c, 1);  // an output whose rows start off their vectors
        if (sizeof(T) == 1) check_trial<T>(i, h, a, 0, 0, r, c, 3);
      }
    }
}

TEMPLATE_TEST_CASE("transpose kernels under trial equal Eigen's on windows at odd offsets and strides",
                   "[transpose][trial]", std::uint8_t, float, std::int32_t, double) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  for (auto [R, C] : {std::pair<Index, Index>{600, 701}, {515, 1030}}) {
    const HostMatrix<T> h = random_values<T>(R, C);
    const auto a = to_device(h, s);
    // Windows from the allocation's first element, to its last (bottom-right corner), at odd
    // offsets, single rows and columns, and tile edges.
    const std::vector<std::array<Index, 4>> windows = {
        {0, 0, R, C},         {0, 0, R - 1, C - 3},     {1, 3, R - 1, C - 3},      {R - 129, C - 257, 129, 257},
        {R - 33, C - 65, 33, 65}, {2, 1, 131, 129},     {5, 7, 1, C - 7},          {3, 2, R - 3, 1},
        {7, 5, 256, 128},     {1, 1, 300, 2},           {R - 290, C - 3, 290, 3}};
    for (const auto& w : windows)
      for (int i = 0; i < transpose_trial_count<T>(); ++i)
        for (Index at : {Index(0), Index(1), Index(2)}) check_trial<T>(i, h, a, w[0], w[1], w[2], w[3], at);
  }
}

TEMPLATE_TEST_CASE("transpose kernels under trial equal Eigen's on many tile rows", "[transpose][trial]",
                   std::uint8_t, float) {
  // Many tile rows, the last one partial (1157 rows: 10 tiles of 128, 19 of 64, 5 of 256), every
  // row off its word (odd sides), as a dense matrix and as a window at an odd offset into an
  // output off its word; every tile column but the last whole (387 = 3 x 124 + 15).
  using T = TestType;
  const Stream s = Stream::per_thread();
  const Index R = 1160, C = 389;
  const HostMatrix<T> h = random_values<T>(R, C);
  const auto a = to_device(h, s);
  for (int i = 0; i < transpose_trial_count<T>(); ++i) {
    check_trial<T>(i, h, a, 0, 0, 1157, 387, 0);
    check_trial<T>(i, h, a, 3, 1, 1157, 387, 1);
  }
}

TEMPLATE_TEST_CASE("vector tiles under trial on tall matrices, in transpose_vec_grid's bands and in bands of N",
                   "[transpose][trial][vec]", std::uint8_t, float) {
  // The vector tiles forced on tall matrices: every "ours-vec-n*" trial but the column windows,
  // the 8-, 16- and 32-vector tiles of 256 to 1024 threads, plain and in bands (VecTall, the
  // default's banded tile since session 41, is a 32-vector one), and the persistent two-stage
  // kernel on its tiles ("ours-vecp-n*": each block many tiles in turn). With 16-vector tiles u8 240001 x
  // 531 is 938 tile rows, which transpose_vec_grid cuts for Vec into three bands of 313, 313 and
  // 312 (428 tile rows a band at most) and the "-bN" trials into bands of N, the last partial;
  // f32 120011 x 541 is 1876 tile rows, three bands of 626, 626 and 624 (907 at most). Dense,
  // and a window at an odd offset into an output off its vector. Under a sanitizer a shorter
  // matrix (118 tile rows of bytes: one band but for the "-bN" trials).
  using T = TestType;
  const Stream s = Stream::per_thread();
  const bool bytes = sizeof(T) == 1;
  const Index R = under_sanitizer() ? 30001 : (bytes ? 240001 : 120011), C = bytes ? 531 : 541;
  const HostMatrix<T> h = random_values<T>(R, C);
  const auto a = to_device(h, s);
  int tried = 0;
  for (int i = 0; i < transpose_trial_count<T>(); ++i) {
    const std::string name = transpose_trial_name<T>(i);
    const bool vec = name.rfind("ours-vec-n", 0) == 0 || name.rfind("ours-vecp-n", 0) == 0;
    if (!vec || name.find("-w") != std::string::npos) continue;
    check_trial<T>(i, h, a, 0, 0, R, C, 0);
    check_trial<T>(i, h, a, 3, 1, R - 9, C - 5, 1);
    ++tried;
  }
  CHECK(tried >= 6);  // the plain tiles and their banded forms
}

TEMPLATE_TEST_CASE("transpose kernels under trial equal Eigen's on a few rows or a few columns", "[transpose][trial]",
                   std::uint8_t, float, std::int32_t, double) {
  // Sides 2..16 (the chunk kernels, whatever their chunk: 8 KiB to 32 KiB; the byte vector
  // kernels' warps of 496 columns / 512 rows) against long sides around chunk edges (chunks of
  // 128 * k lines: 128, 512, 1280, 2688, 5376, 10880 ...), as the windows at (0, 0) and at (1, 3)
  // (ending at the allocation's end) of a matrix a row and three columns larger, and as a dense
  // matrix.
  using T = TestType;
  const Stream s = Stream::per_thread();
  // Under compute-sanitizer (many times slower) the long sides stop at one chunk edge past 2K.
  const std::vector<Index> longs = under_sanitizer() ? std::vector<Index>{129, 2689}
                                                     : std::vector<Index>{129, 513, 1281, 2689, 5377, 10881, 65537};
  for (Index few : {2, 3, 5, 16})
    for (Index n : longs)
      for (auto [r, c] : {std::pair<Index, Index>{few, n}, {n, few}}) {
        const HostMatrix<T> h = random_values<T>(r + 1, c + 3);
        const auto a = to_device(h, s);
        const HostMatrix<T> hd = random_values<T>(r, c);  // dense: the dense few-columns kernels
        const auto ad = to_device(hd, s);
        for (int i = 0; i < transpose_trial_count<T>(); ++i) {
          if (!under_sanitizer()) check_trial<T>(i, h, a, 0, 0, r, c, 0);
          check_trial<T>(i, h, a, 1, 3, r, c, 0);
          if (!under_sanitizer()) check_trial<T>(i, hd, ad, 0, 0, r, c, 0);
          check_trial<T>(i, hd, ad, 0, 0, r, c, 1);  // output rows off their vectors
        }
      }
}

TEMPLATE_TEST_CASE("transpose kernels under trial on few columns of narrow matrices", "[transpose][trial]",
                   std::uint8_t, float, double) {
  // Few columns through a stride of 2 to 17 elements (ours-span16 takes up to 16; the other few
  // kernels as they apply): the dense matrix, its rows from row 1 (dense, input off its vector),
  // windows ending at the allocation's end (right edge: the last byte read is the allocation's
  // last) and inside it, rows around the span kernel's warps (512 bytes of each output row) and
  // blocks of 4 warps, outputs on and off their vectors.
  using T = TestType;
  const Stream s = Stream::per_thread();
  const std::vector<Index> rows_list = under_sanitizer() ? std::vector<Index>{2050} : std::vector<Index>{514, 2050, 5003};
  for (Index C : {2, 3, 5, 7, 8, 13, 16, 17})
    for (Index R : rows_list) {
      const HostMatrix<T> h = random_values<T>(R, C);
      const auto a = to_device(h, s);
      const Index narrow = C > 2 ? C - 2 : 1;
      const std::vector<std::array<Index, 4>> windows = {
          {0, 0, R, C}, {1, 0, R - 1, C}, {0, C - narrow, R, narrow}, {3, 1, R - 4, narrow}, {1, C - 1, R - 1, 1}};
      for (const auto& w : windows)
        for (int i = 0; i < transpose_trial_count<T>(); ++i) {
          const std::string name = transpose_trial_name<T>(i);
          if (name.rfind("ours-span", 0) != 0 && name.rfind("ours-bytes", 0) != 0 && name.rfind("ours-chunk", 0) != 0 &&
              name.rfind("ours-regs", 0) != 0)
            continue;
          for (Index at : {Index(0), Index(1), Index(3)})
            if (!under_sanitizer() || at == 1) check_trial<T>(i, h, a, w[0], w[1], w[2], w[3], at);
        }
    }
}

TEMPLATE_TEST_CASE("transpose kernels under trial on rows and columns that line up on 16 bytes", "[transpose][trial]",
                   std::uint8_t, float, std::int32_t, double) {
  // The register kernels of "ours-regs16" and "ours-rows16s" (4- and 8-byte rows, stores staged
  // through shared memory) need 16-byte vectors: dense few rows of a multiple of 16 bytes (or a
  // window of them, leaving a partial last group), dense few columns of a multiple of 16 bytes
  // of rows; every trial runs on them (f64 has no "ours-regs16" kernel).
  using T = TestType;
  const Stream s = Stream::per_thread();
  const std::vector<Index> longs = under_sanitizer() ? std::vector<Index>{16, 1040} : std::vector<Index>{16, 1040, 65536};
  for (Index few : {2, 3, 5, 7, 8, 15, 16})
    for (Index n : longs) {
      for (auto [r, c] : {std::pair<Index, Index>{few, n}, {n, few}}) {
        const HostMatrix<T> h = random_values<T>(r, c);
        const auto a = to_device(h, s);
        for (int i = 0; i < transpose_trial_count<T>(); ++i) {
          check_trial<T>(i, h, a, 0, 0, r, c, 0);
          check_trial<T>(i, h, a, 0, 0, r, c, 1);
          if (r == few && n > 16) check_trial<T>(i, h, a, 0, 0, r, c - 11, 0);  // a partial last group
        }
      }
    }
}

TEST_CASE("transpose_few_rows_regs_kernel forced on few rows of bytes", "[transpose][trial][rows16]") {
  // "ours-rows16" / "ours-rows16-direct": 2 to 16 rows (1 and 17: the default kernels), columns
  // around a thread's 16, a warp's 512 and a block's 1024, primes; the dense matrix, windows at
  // odd columns of an odd stride (every row at its own offset into a vector) ending at the
  // allocation's end; outputs on a vector (the kernel's) and off it (the default's).
  using T = std::uint8_t;
  const Stream s = Stream::per_thread();
  const std::vector<Index> cols_list = under_sanitizer() ? std::vector<Index>{17, 1031}
                                                         : std::vector<Index>{1, 15, 16, 17, 511, 513, 1023, 1031, 65537};
  for (Index R : {1, 2, 3, 5, 8, 11, 16, 17})
    for (Index C : cols_list) {
      const Index wide = C + 7;  // an odd stride around the window
      const HostMatrix<T> h = random_values<T>(R, wide);
      const auto a = to_device(h, s);
      for (int i = 0; i < transpose_trial_count<T>(); ++i) {
        if (std::string(transpose_trial_name<T>(i)).rfind("ours-rows", 0) != 0) continue;
        check_trial<T>(i, h, a, 0, 7, R, C, 0);  // the window ending where the allocation does
        check_trial<T>(i, h, a, 0, 3, R, C, 16);
        if (!under_sanitizer()) {
          check_trial<T>(i, h, a, 0, 0, R, wide, 0);  // the whole matrix
          check_trial<T>(i, h, a, 0, 1, R, C, 1);
        }
      }
    }
}

TEMPLATE_TEST_CASE("the run kernels forced on one short side", "[transpose][trial][run]", std::uint8_t, float,
                   double) {
  // "ours-run": transpose_rows_run_kernel on 17 to 127 rows (K = 4, 2 and 1 pieces; pads for
  // even counts, or 4-byte rows in groups) and transpose_cols_run_kernel on 17 to 127 columns at
  // most twice that far apart, over several regions (long sides past 1016 / 504 / 248 columns,
  // 896 / 128 rows); windows at odd offsets through odd strides ending where the allocation ends,
  // outputs on and off their words.
  using T = TestType;
  const Stream s = Stream::per_thread();
  int trial = -1;
  for (int i = 0; i < transpose_trial_count<T>(); ++i)
    if (transpose_trial_name<T>(i) == std::string("ours-run")) trial = i;
  REQUIRE(trial >= 0);
  // 4-byte rows of 18, 20, 22, 36 go in groups of 2 or 4 (no pad); bytes of 42 and 126 rows take a
  // pad with g = 7, whose second phase turns its word loads.
  const std::vector<Index> shorts = under_sanitizer() ? std::vector<Index>{17, 20, 32, 42, 49, 127}
                                                      : std::vector<Index>{17, 18, 20, 22, 24, 31, 32, 33, 36, 40, 42,
                                                                           48, 49, 63, 64, 65, 96, 100, 126, 127};
  const std::vector<Index> longs = under_sanitizer() ? std::vector<Index>{1017, 2029}
                                                     : std::vector<Index>{129, 503, 1016, 1017, 2029, 4099};
  int n = 0;
  for (Index few : shorts)
    for (Index len : longs) {
      const Index at = n++ % 5;
      {  // few rows: the whole matrix, then a window off by odd columns through a wider stride
        const HostMatrix<T> h = random_values<T>(few, len + 9);
        const auto a = to_device(h, s);
        check_trial<T>(trial, h, a, 0, 0, few, len + 9, at);
        check_trial<T>(trial, h, a, 0, 9, few, len, 0);  // ending at the allocation's end
        check_trial<T>(trial, h, a, 0, 3, few, len, at);
      }
      {  // few columns: dense, then windows at most twice as far apart as wide
        const HostMatrix<T> h = random_values<T>(len, few);
        const auto a = to_device(h, s);
        check_trial<T>(trial, h, a, 0, 0, len, few, at);
        const HostMatrix<T> w = random_values<T>(len + 3, few + 5);
        const auto b = to_device(w, s);
        check_trial<T>(trial, w, b, 3, 5, len, few, 0);  // ending at the allocation's end
        check_trial<T>(trial, w, b, 1, 2, len, few, at);
      }
    }
}

TEST_CASE("transpose_few_rows_half_kernel and the lane-loaded 33rd vectors forced on few rows of bytes",
          "[transpose][trial][rows16h][rows16e]") {
  // "ours-rows16h" (8 columns a thread; "ours-rows16hs" its run stored through shared memory) and
  // "ours-rows16e" (transpose_few_rows_regs_kernel with
  // kLaneExt), also run by the "[rows16]" case above as "ours-rows" trials: every row count from
  // 8 to 16 (odd ones: the half kernel's odd lanes start half a vector into their pair's run), 2,
  // and 1 and 17 (the default kernels); columns around a lane's 8 or 16, a pair's 16, a warp's
  // 256 or 512 and a block's 1024, primes; windows at odd columns of an odd stride (each row at
  // its own offset into a vector) ending at the allocation's end; outputs on a vector (the
  // kernels') and off it (the default's).
  using T = std::uint8_t;
  const Stream s = Stream::per_thread();
  const std::vector<Index> cols_list = under_sanitizer() ? std::vector<Index>{9, 263, 1031}
                                                         : std::vector<Index>{1, 7, 8, 9, 17, 255, 257, 263, 511,
                                                                              513, 1023, 1025, 1031, 65537};
  for (const std::string name : {"ours-rows16h", "ours-rows16hs", "ours-rows16e"}) {
    int trial = -1;
    for (int i = 0; i < transpose_trial_count<T>(); ++i)
      if (transpose_trial_name<T>(i) == name) trial = i;
    CAPTURE(name);
    REQUIRE(trial >= 0);
    for (Index R : {1, 2, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
      for (Index C : cols_list) {
        const Index wide = C + 7;  // an odd stride around the window
        const HostMatrix<T> h = random_values<T>(R, wide);
        const auto a = to_device(h, s);
        check_trial<T>(trial, h, a, 0, 7, R, C, 0);  // the window ending where the allocation does
        check_trial<T>(trial, h, a, 0, 3, R, C, 16);
        check_trial<T>(trial, h, a, 0, 5, R, C > 1 ? C - 1 : 1, 0);
        if (!under_sanitizer()) {
          check_trial<T>(trial, h, a, 0, 0, R, wide, 0);  // the whole matrix
          check_trial<T>(trial, h, a, 0, 1, R, C, 1);
        }
      }
  }
}

TEMPLATE_TEST_CASE("transpose kernels under trial leave empty outputs alone", "[transpose][trial]", std::uint8_t,
                   float, std::int32_t, double) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  for (auto [r, c] : {std::pair<Index, Index>{0, 0}, {0, 3}, {3, 0}, {0, 16}, {16, 0}}) {
    const DeviceMatrix<T> a(r, c, s);
    DeviceMatrix<T> guard = DeviceMatrix<T>::constant(1, 8, poison_value<T>(), s);
    for (int i = 0; i < transpose_trial_count<T>(); ++i) {
      CAPTURE(transpose_trial_name<T>(i), shape(r, c));
      CHECK_NOTHROW(transpose_trial<T>(i, a.data(), c, guard.data(), r, c, s.native()));
    }
    const std::vector<T> g = guard.to_vector();
    const T poison = poison_value<T>();
    for (const T& v : g) CHECK(std::memcmp(&v, &poison, sizeof(T)) == 0);
  }
}

TEST_CASE("transpose kernels under trial past 2^31 bytes", "[large][trial]") {
  // u8 with odd sides just past 2^31 elements: row and output offsets past 2^31. Checked on a
  // stride of columns and on the last rows, as the [large] test of transpose() does.
  const Index rows = 32771, cols = 65537;
  std::vector<std::uint8_t> h(static_cast<std::size_t>(rows * cols));
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) h[static_cast<std::size_t>(r * cols + c)] = static_cast<std::uint8_t>(r * 7 + c * 13);
  const auto a = DeviceMatrix<std::uint8_t>::from_vector(h, rows, cols);
  for (int i = 0; i < transpose_trial_count<std::uint8_t>(); ++i) {
    CAPTURE(transpose_trial_name<std::uint8_t>(i));
    DeviceMatrix<std::uint8_t> out(cols, rows, a.stream());
    transpose_trial<std::uint8_t>(i, a.data(), cols, out.data(), rows, cols, a.stream().native());
    const std::vector<std::uint8_t> t = out.to_vector();
    Index bad = 0;
    for (Index c = 0; c < cols; c += 97)
      for (Index r = 0; r < rows; ++r) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    for (Index r = rows - 3; r < rows; ++r)
      for (Index c = 0; c < cols; ++c) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    CHECK(bad == 0);
  }
}
