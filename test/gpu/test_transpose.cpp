// transpose(): exact equality with Eigen on awkward shapes, every type, outputs poisoned.
#include "support/util.hpp"

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
// word (byte tiles are 128 x 128 with 4-byte words, others 64 x 64), and byte shapes that are
// not multiples of 4 (the single-element fallback).
const std::vector<std::pair<Index, Index>> kExtraShapes = {
    {3, 100003}, {100003, 3}, {2, 65537}, {65537, 2}, {64, 64}, {128, 128}, {192, 320}, {320, 192},
    {260, 516}, {516, 260}, {4096, 4100}, {4100, 4096}, {4097, 4099}, {1000, 1024}, {8, 12}, {12, 8}};
}  // namespace

TEMPLATE_TEST_CASE("transpose equals Eigen's on awkward shapes", "[transpose]", float, double, std::int32_t,
                   std::uint8_t) {
  const Stream s = Stream::per_thread();
  for (auto [r, c] : awkward_shapes()) check_transpose<TestType>(r, c, s);
  for (auto [r, c] : kExtraShapes) check_transpose<TestType>(r, c, s);
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
  // Just past 2^31 bytes, so element offsets pass 2^31: once with 4-byte words (both sides
  // multiples of 4), once with the single-byte fallback (odd cols). Checked on a stride of
  // columns and on the last rows.
  for (auto [rows, cols] : {std::pair<Index, Index>{32772, 65536}, {32771, 65537}}) {
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
    for (Index c = 0; c < cols; c += 97)
      for (Index r = 0; r < rows; ++r) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    for (Index r = rows - 3; r < rows; ++r)  // the last rows, every column
      for (Index c = 0; c < cols; ++c) bad += t[static_cast<std::size_t>(c * rows + r)] != h[static_cast<std::size_t>(r * cols + c)];
    CHECK(bad == 0);
  }
}
