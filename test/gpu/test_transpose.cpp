// transpose(): exact equality with Eigen on awkward shapes, every type, outputs poisoned: the
// tiles (the widest words that fit; else the vector tile, the byte shift tile or one element a
// word), the few-rows and few-columns kernels (sides up to 16: register and byte vector kernels
// where 16-byte vectors line up, the span kernel for columns at most 16 apart, chunks
// elsewhere) around their block edges, the run kernels of one side of 17 to 127 elements, and
// views at odd offsets and strides.
#include "support/util.hpp"

#include <array>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T>
void check_transpose(Index r, Index c, const Stream& stream) {
  CAPTURE(shape(r, c));
  const HostMatrix<T> h = random_matrix<T>(r, c, std::is_signed_v<T> ? -1000 : 0, std::is_same_v<T, std::uint8_t> ? 255 : 1000);
  auto a = to_device(h, stream);
  poison_next<T>(c, r, stream);
  const DeviceMatrix<T> t = a.transpose();
  REQUIRE(t.rows() == c);
  REQUIRE(t.cols() == r);
  CHECK(t.stream() == a.stream());
  const HostMatrix<T> want = h.transpose();
  CHECK(to_eigen(t) == want);
  CHECK(to_eigen(a) == h);  // operand intact
}

// Past the awkward shapes: very wide and very tall, tile multiples and tile multiples plus a
// word (byte tiles are 256 x 256 with 8-byte words where the sides are multiples of 8; others
// 64 x 64 with two elements a word), and shapes that are not multiples of a word (1- and 4-byte
// elements: the vector tile from 128 rows and up to 80 bytes / 36 elements or from 128
// columns; else bytes the shift tile where rows are not whole 4-byte words, 128 x 128 with
// 4-byte words where they are; the one-element fallback for the rest).
const std::vector<std::pair<Index, Index>> kExtraShapes = {
    {3, 100003}, {100003, 3}, {2, 65537}, {65537, 2}, {64, 64}, {128, 128}, {192, 320}, {320, 192},
    {260, 516}, {516, 260}, {4096, 4100}, {4100, 4096}, {4097, 4099}, {1000, 1024}, {8, 12}, {12, 8},
    {256, 512}, {264, 776}, {776, 264}, {255, 257},
    {1023, 1029}, {1024, 1027}, {1027, 1024}, {4095, 4101}, {4096, 4101}, {4101, 4096},
    // rows of 4-byte words, not 8 (bytes: the vector tile where it runs, else 4-byte words):
    // narrow (36, 76 columns), the gap between narrow and wide (84, 124), wide (132), and fewer
    // than 128 rows (100, 124)
    {1028, 36}, {260, 76}, {1028, 84}, {132, 124}, {128, 132}, {132, 128}, {100, 1028}, {124, 260},
    // the vector tile's edges for 4-byte elements: 36 / 37 columns, 127 / 128 rows and columns
    {1001, 37}, {127, 1001}, {1001, 127}, {128, 129}};

// The few-rows / few-columns kernels: sides 2..16 against long sides around their chunk edges
// (chunks of 128 * k lines: 128, 1280, 5376, 8192 ...), long sides of whole 16-byte vectors
// (1040, 65536: the register kernels), and 17 (the first tile shape).
const std::vector<Index> kFewSides = {2, 3, 5, 7, 8, 15, 16, 17};
const std::vector<Index> kLongSides = {1, 2, 127, 129, 1040, 1281, 5377, 8193, 65536, 65537};

// Rows and columns of every residue mod 4 past one 128-byte tile: the byte tile moves 4-byte
// words whatever the alignment of its rows.
const std::vector<Index> kRaggedSides = {129, 130, 131, 132, 387};

template <class T>
void check_view_transpose(const HostMatrix<T>& h, const DeviceMatrix<T>& a, Index r0, Index c0, Index rows,
                          Index cols) {
  CAPTURE(shape(h.rows(), h.cols()), r0, c0, shape(rows, cols));
  const MatrixView<const T> v = a.block(r0, c0, rows, cols);
  poison_next<T>(cols, rows, v.stream());
  const DeviceMatrix<T> t = v.transpose();
  REQUIRE(t.rows() == cols);
  REQUIRE(t.cols() == rows);
  const HostMatrix<T> want = h.block(r0, c0, rows, cols).transpose();
  CHECK(to_eigen(t) == want);
}
}  // namespace

TEMPLATE_TEST_CASE("transpose with a few rows or a few columns equals Eigen's", "[transpose]", float, double,
                   std::int32_t, std::uint8_t) {
  const Stream s = Stream::per_thread();
  for (Index few : kFewSides)
    for (Index n : kLongSides) {
      check_transpose<TestType>(few, n, s);
      check_transpose<TestType>(n, few, s);
    }
}

// One side of 17 to 127 elements (the run kernels where they won, dispatch/transpose.cuh's
// launch_transpose_short_side; else the tiles): short sides odd, even, whole 4- and 8-byte
// words, and at both ends of each kernel's range (17, 31, 32, 48, 49, 95, 96, 127); long sides
// around the regions (a u8 region of 16 KiB holds 1016 columns of 17 rows, 504 of 31; of
// 32 KiB 248 of 127) and primes, both orientations, and windows through odd strides.
TEMPLATE_TEST_CASE("transpose with one short side equals Eigen's", "[transpose][run]", float, double, std::int32_t,
                   std::uint8_t) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  for (Index few : {17, 18, 24, 31, 32, 40, 48, 49, 63, 64, 95, 96, 100, 127})
    for (Index n : {248, 503, 1017, 2029, 4100}) {
      check_transpose<T>(few, n, s);
      check_transpose<T>(n, few, s);
    }
  for (auto [R, C] : {std::pair<Index, Index>{40, 3001}, {3001, 40}, {130, 2003}, {2003, 130}}) {
    const HostMatrix<T> h = random_matrix<T>(R, C, 0, std::is_same_v<T, std::uint8_t> ? 255 : 1000);
    const auto a = to_device(h, s);
    if (R < C) {
      check_view_transpose<T>(h, a, 1, 3, R - 7, C - 5);    // 33 / 123 rows through a stride
      check_view_transpose<T>(h, a, 0, 1, 24, C - 1);       // ending at the allocation's end
    } else {
      check_view_transpose<T>(h, a, 3, 1, R - 5, C - 7);    // 33 / 123 columns through a stride
      check_view_transpose<T>(h, a, 1, C - 24, R - 1, 24);  // ending at the allocation's end
    }
  }
}

TEMPLATE_TEST_CASE("transpose of ragged shapes equals Eigen's", "[transpose]", float, double, std::int32_t,
                   std::uint8_t) {
  const Stream s = Stream::per_thread();
  for (Index r : kRaggedSides)
    for (Index c : kRaggedSides) check_transpose<TestType>(r, c, s);
}

TEMPLATE_TEST_CASE("transpose of views at odd offsets and strides equals Eigen's", "[transpose]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  // Windows: few rows and few columns (the chunk kernels through a stride), a single row and a
  // single strided column, tile edges, all at offsets that leave byte rows unaligned.
  const std::vector<std::array<Index, 4>> windows = {
      {1, 3, 3, 1001}, {2, 1, 1001, 3},  {0, 5, 1, 999},   {5, 2, 999, 1},   {3, 7, 257, 259},
      {1, 1, 16, 700}, {7, 3, 700, 16},  {0, 0, 17, 900},  {1, 2, 900, 17},  {9, 11, 1000, 1001},
      {2, 3, 2, 1090}, {3, 2, 1090, 2},  {1, 0, 129, 131}, {0, 1, 131, 129}, {4, 4, 128, 128},
      {2, 29, 300, 700}, {5, 17, 700, 300}, {1, 63, 65, 1000}};
  // 1120 columns: a whole number of 32-byte sectors for every type, so each window's rows start
  // at the same offset inside a sector (the tile grid shifts to read whole sectors).
  for (auto [R, C] : {std::pair<Index, Index>{1100, 1100}, {1101, 1103}, {1100, 1120}}) {
    const HostMatrix<T> h = random_matrix<T>(R, C, std::is_signed_v<T> ? -1000 : 0, std::is_same_v<T, std::uint8_t> ? 255 : 1000);
    const auto a = to_device(h, s);
    for (const auto& w : windows) check_view_transpose<T>(h, a, w[0], w[1], w[2], w[3]);
  }
}

TEMPLATE_TEST_CASE("transpose of few columns of narrow matrices equals Eigen's", "[transpose][span]", std::uint8_t,
                   float, std::int32_t, double, std::uint64_t) {
  // Few columns through a stride of 2 to 17 elements (more than 16 rows: the span kernel,
  // transpose_few_cols_span_kernel, up to a stride of 16, after the register and byte kernels
  // for bytes; 17: the chunks): the whole matrix, its rows from row 1 (input off its vector),
  // windows at its right edge (ending at the allocation's end), inside it, and one strided
  // column; rows just past the few-rows side (17), around the span kernel's warps (512 bytes of
  // each output row: 512 u8, 128 f32, 64 f64 rows) and blocks of 4 warps, and a prime.
  using T = TestType;
  const Stream s = Stream::per_thread();
  for (Index C : {2, 3, 5, 7, 8, 13, 16, 17})
    for (Index R : {18, 21, 65, 131, 514, 2050, 4999}) {
      const HostMatrix<T> h = random_matrix<T>(R, C, 0, std::is_same_v<T, std::uint8_t> ? 255 : 1000);
      const auto a = to_device(h, s);
      const Index narrow = C > 2 ? C - 2 : 1;
      check_view_transpose<T>(h, a, 0, 0, R, C);
      check_view_transpose<T>(h, a, 1, 0, R - 1, C);
      check_view_transpose<T>(h, a, 0, C - narrow, R, narrow);
      check_view_transpose<T>(h, a, 3, 1, R - 4, narrow);
      check_view_transpose<T>(h, a, 1, C - 1, R - 1, 1);
    }
}

TEST_CASE("transpose of bytes around the shift tile's edges equals Eigen's", "[transpose]") {
  // Bytes whose rows are not whole 4-byte words take transpose_shift_kernel (tiles of 128 rows x
  // 124 columns) where the vector tile does not run (fewer than 128 rows, or 81-127 columns):
  // sides around both, dense and as windows that start off a word and end at the allocation's
  // last byte (its last row's words must not be read past it).
  using T = std::uint8_t;
  const Stream s = Stream::per_thread();
  const std::vector<Index> sides = {17, 123, 125, 127, 129, 247, 249, 257, 373};
  for (Index r : sides)
    for (Index c : sides) check_transpose<T>(r, c, s);
  const Index R = 401, C = 509;
  const HostMatrix<T> h = random_matrix<T>(R, C, 0, 255);
  const auto a = to_device(h, s);
  for (const std::array<Index, 4>& w : std::vector<std::array<Index, 4>>{
           {R - 129, C - 125, 129, 125}, {R - 17, C - 249, 17, 249}, {1, 3, R - 1, C - 3}, {3, 1, 128, 124}})
    check_view_transpose<T>(h, a, w[0], w[1], w[2], w[3]);
}

TEST_CASE("transpose of bytes on 4-byte words with output rows of whole sectors equals Eigen's", "[transpose]") {
  // Rows of whole 4-byte words but not 8, output rows of whole 32-byte sectors (rows a multiple of
  // 32), both sides from 256: DefaultTranspose<u8>::Sector (256 x 256 bytes). One tile and a word,
  // tiles plus a word each way, rows past a tile by 32; windows from column 4 (4-byte words, not
  // 8) and ending at the allocation's last byte; beside them rows off a sector (the vector tile).
  using T = std::uint8_t;
  const Stream s = Stream::per_thread();
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{
           {256, 260}, {288, 1028}, {544, 772}, {1024, 516}, {2048, 4100}, {260, 288}, {276, 1028}})
    check_transpose<T>(r, c, s);
  const Index R = 640, C = 1036;
  const HostMatrix<T> h = random_matrix<T>(R, C, 0, 255);
  const auto a = to_device(h, s);
  check_view_transpose<T>(h, a, 0, 4, R, C - 4);          // from column 4 to the last byte
  check_view_transpose<T>(h, a, 32, 8, 576, 1024);        // 8-byte words of a stride of 4 mod 8
  check_view_transpose<T>(h, a, 3, 12, 288, 300);         // rows from 3
  check_view_transpose<T>(h, a, R - 256, C - 260, 256, 260);
}

TEMPLATE_TEST_CASE("transpose equals Eigen's on awkward shapes", "[transpose]", float, double, std::int32_t,
                   std::uint8_t) {
  const Stream s = Stream::per_thread();
  for (auto [r, c] : awkward_shapes()) check_transpose<TestType>(r, c, s);
  for (auto [r, c] : kExtraShapes) check_transpose<TestType>(r, c, s);
}

// Tall matrices on the narrow vector tile (u8 16 x 80 bytes a tile, 256 rows; f32 64 x 36
// elements) in bands of kTransposeVecTallBand = 16 tile rows (transpose_vec_tall: more than
// one tile column, at least twice as many tile rows, tile columns past 6 MiB of reads): u8
// 210001 rows are 821 tile rows, 52 bands, the last of 5; 240001 rows 938, the last band of 10;
// f32 118001 rows 1844, the last band of 4; dense and a window. Beside them shapes the rule
// leaves to VecNarrow in transpose_vec_grid's one band: u8 20011 x 389 and f32 20011 x 389
// (tall, but tile columns of 2.1 and 3.4 MB), u8 5003 x 1201 (20 tile rows of 16 columns) and
// 3001 x 131.
TEMPLATE_TEST_CASE("transpose of tall matrices in bands of tile rows equals Eigen's", "[transpose]", float,
                   std::uint8_t) {
  using T = TestType;
  const Stream s = Stream::per_thread();
  const bool bytes = sizeof(T) == 1;
  for (auto [r, c] : bytes ? std::vector<std::pair<Index, Index>>{{210001, 131}, {240001, 531}, {20011, 389},
                                                                  {5003, 1201}, {3001, 131}}
                           : std::vector<std::pair<Index, Index>>{{118001, 67}, {120011, 541}, {20011, 389}})
    check_transpose<T>(r, c, s);
  const Index R = bytes ? 210011 : 118011, C = bytes ? 141 : 77;
  const HostMatrix<T> h = random_matrix<T>(R, C, 0, bytes ? 255 : 1000);
  const auto a = to_device(h, s);
  check_view_transpose<T>(h, a, 3, 5, R - 9, C - 8);
}

TEMPLATE_TEST_CASE("transpose of the integer-sum types", "[transpose]", std::int64_t, std::uint64_t) {
  const Stream s = Stream::per_thread();
  for (auto [r, c] : awkward_shapes(2)) check_transpose<TestType>(r, c, s);
  for (auto [r, c] : {std::pair<Index, Index>{100, 3001}, {3001, 100}}) check_transpose<TestType>(r, c, s);
}

TEST_CASE("transpose runs on the matrix's own stream and twice gives the original") {
  const Stream s = Stream::create();
  const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(1080, 1920, 0, 255);
  auto a = to_device(h, s);
  poison_next<std::uint8_t>(1920, 1080, s);
  auto t = a.transpose();
  CHECK(t.stream() == s);
  auto tt = t.transpose();
  CHECK(tt.stream() == s);
  CHECK(to_eigen(tt) == h);
  CHECK(to_eigen(t) == HostMatrix<std::uint8_t>(h.transpose()));
}

TEST_CASE("transpose of empty matrices keeps the swapped shape") {
  for (auto [r, c] : {std::pair<Index, Index>{0, 0}, {0, 7}, {7, 0}}) {
    CAPTURE(shape(r, c));
    DeviceMatrix<float> a(r, c);
    auto t = a.transpose();
    CHECK(t.rows() == c);
    CHECK(t.cols() == r);
    CHECK(t.empty());
  }
}

TEST_CASE("transpose of a matrix past 2^31 bytes", "[large]") {
  // Just past 2^31 bytes, so element offsets pass 2^31: the byte tile with aligned rows (both
  // sides multiples of 4) and with unaligned ones (odd cols). Checked on a stride of columns and
  // on the last rows.
  // Then a few rows and a few columns (the chunk kernels).
  for (auto [rows, cols] : {std::pair<Index, Index>{32772, 65536}, {32771, 65537}, {3, 715827891}, {715827891, 3}}) {
    CAPTURE(shape(rows, cols));
    std::vector<std::uint8_t> h(static_cast<std::size_t>(rows * cols));
    for (Index r = 0; r < rows; ++r) {
      std::uint8_t* row = h.data() + r * cols;
      const auto base = static_cast<unsigned>(r * 7);
      for (Index c = 0; c < cols; ++c) row[c] = static_cast<std::uint8_t>(base + static_cast<unsigned>(c) * 13u);
    }
    auto a = DeviceMatrix<std::uint8_t>::from_vector(h, rows, cols);
    const std::vector<std::uint8_t> t = a.transpose().to_vector();
    REQUIRE(t.size() == h.size());
    Index bad = 0;
    for (Index c = 0; c < cols; c += cols < 97 ? 1 : 97)
      for (Index r = 0; r < rows; ++r) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    for (Index r = rows - 3; r < rows; ++r)  // the last rows, every column
      for (Index c = 0; c < cols; ++c) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    CHECK(bad == 0);
  }
}
