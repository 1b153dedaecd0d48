// The strided element-wise kernel (the slot kernel of dispatch/transform.cuh) through views, against
// a host reference computed in double: every alignment of the output and the inputs, odd strides
// and offsets, 1- and 3-wide windows, 3-wide rows by the million, long rows, dense windows that
// are not aligned, foreign pitched memory whose padding is never written, in place on the very
// same window, fill. Results are poisoned first; a write through a window is checked against the
// whole matrix, so an element written outside it fails too.
#include "support/util.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

template <class T> double lo() { return std::is_unsigned_v<T> ? 0 : -100; }
template <class T> double hi() { return std::is_same_v<T, std::uint8_t> ? 255 : 100; }

template <class T>
HostMatrix<T> rand_m(Index r, Index c) {
  return random_matrix<T>(r, c, lo<T>(), hi<T>());
}

/// x computed in double, stored as T: integers wrap modulo 2^bits as T's own arithmetic does,
/// floats round once (exact sums and differences of these values in double).
template <class T>
T as(double x) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<long long>(x));
  else return static_cast<T>(x);
}

template <class T, class Op>
HostMatrix<T> ref2(const HostMatrix<T>& a, const HostMatrix<T>& b, Op op) {
  HostMatrix<T> r(a.rows(), a.cols());
  for (Index i = 0; i < a.rows(); ++i)
    for (Index j = 0; j < a.cols(); ++j) r(i, j) = as<T>(op(static_cast<double>(a(i, j)), static_cast<double>(b(i, j))));
  return r;
}

template <class T, class Op>
HostMatrix<T> ref1(const HostMatrix<T>& a, Op op) {
  HostMatrix<T> r(a.rows(), a.cols());
  for (Index i = 0; i < a.rows(); ++i)
    for (Index j = 0; j < a.cols(); ++j) r(i, j) = as<T>(op(static_cast<double>(a(i, j))));
  return r;
}

template <class T>
bool same(const HostMatrix<T>& got, const HostMatrix<T>& want) {
  return got.rows() == want.rows() && got.cols() == want.cols() && (got.size() == 0 || got == want);
}

/// A window of `rows` x `cols` at (r0, c0) of an R x C matrix: stride C.
struct Win {
  Index R, C, r0, c0, rows, cols;
};

std::string describe(const Win& w) {
  return shape(w.rows, w.cols) + " at (" + std::to_string(w.r0) + ", " + std::to_string(w.c0) + ") of " +
         shape(w.R, w.C);
}

/// A window of `rows` x `cols` in a matrix a little larger, at a random offset: the stride is
/// cols + pad (pad 0 gives dense rows), the offset odd or even as it falls.
Win random_win(Index rows, Index cols, Index pad) {
  std::uniform_int_distribution<Index> d(0, 17);
  const Index c0 = pad == 0 ? 0 : std::uniform_int_distribution<Index>(0, pad)(rng());
  const Index r0 = d(rng()) % 3;
  return {rows + r0 + d(rng()) % 2, cols + pad, r0, c0, rows, cols};
}

/// Pads that make every stride class: dense, +1 (odd for even widths), 2, 3, 5 and 13 (misaligned
/// by every amount within 16 bytes as the rows go on), 16 bytes' worth of elements (every row
/// at the same alignment), and one at random. Under a sanitizer (kernels run many times slower)
/// three of them.
template <class T>
std::vector<Index> pads() {
  if (under_sanitizer()) return {1, 3, 13};
  return {0, 1, 2, 3, 5, 13, Index(16 / sizeof(T)), std::uniform_int_distribution<Index>(1, 40)(rng())};
}

const std::vector<Index> kAllWidths = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 257, 1000, 4095, 4097};
const std::vector<Index> kAllHeights = {1, 2, 3, 17, 66};
/// Under a sanitizer (kernels run many times slower; the whole list took more than 165 s under
/// each tool on the H200) one width of each class: 1, odd, one 16-byte vector, a vector and a
/// bit, past a warp of vectors, and heights 1, 3 and 17.
const std::vector<Index>& widths() {
  static const std::vector<Index> quick = {1, 3, 4, 17, 65, 257};
  return under_sanitizer() ? quick : kAllWidths;
}
const std::vector<Index>& heights() {
  static const std::vector<Index> quick = {1, 3, 17};
  return under_sanitizer() ? quick : kAllHeights;
}

}  // namespace

TEMPLATE_TEST_CASE("strided a + b, a - b and scalar forms: every width, stride and offset", "[views][strided]",
                   std::uint8_t, float, double, std::int32_t) {
  using T = TestType;
  const bool quick = under_sanitizer();
  for (Index rows : heights()) {
    for (Index cols : widths()) {
      if (quick && rows * cols > 20000) continue;
      const std::vector<Index> pa = pads<T>(), pb = pads<T>();
      for (std::size_t k = 0; k < pa.size(); ++k) {
        // a and b at different strides and offsets (their misalignments differ from the
        // output's and each other's), then both at one window shape of the same matrix size.
        const Win wa = random_win(rows, cols, pa[k]);
        const Win wb = random_win(rows, cols, pb[(k + 3) % pb.size()]);
        CAPTURE(describe(wa), describe(wb));
        const HostMatrix<T> ha = rand_m<T>(wa.R, wa.C), hb = rand_m<T>(wb.R, wb.C);
        const auto A = to_device(ha);
        const auto B = to_device(hb);
        const auto va = A.block(wa.r0, wa.c0, rows, cols);
        const auto vb = B.block(wb.r0, wb.c0, rows, cols);
        const HostMatrix<T> ea = ha.block(wa.r0, wa.c0, rows, cols), eb = hb.block(wb.r0, wb.c0, rows, cols);
        poison_next<T>(rows, cols, A.stream());
        CHECK(same<T>(to_eigen(va + vb), ref2<T>(ea, eb, [](double x, double y) { return x + y; })));
        poison_next<T>(rows, cols, A.stream());
        CHECK(same<T>(to_eigen(va - vb), ref2<T>(ea, eb, [](double x, double y) { return x - y; })));
        if (k % 2 == 0) {
          poison_next<T>(rows, cols, A.stream());
          CHECK(same<T>(to_eigen(va * T(3)), ref1<T>(ea, [](double x) { return x * 3; })));
          poison_next<T>(rows, cols, A.stream());
          CHECK(same<T>(to_eigen(T(7) - va), ref1<T>(ea, [](double x) { return 7 - x; })));
          if constexpr (std::is_signed_v<T>) {
            poison_next<T>(rows, cols, A.stream());
            CHECK(same<T>(to_eigen(-va), ref1<T>(ea, [](double x) { return -x; })));
          }
        }
        CHECK(same<T>(to_eigen(A), ha));  // inputs intact
        CHECK(same<T>(to_eigen(B), hb));
      }
    }
  }
}

TEMPLATE_TEST_CASE("in place on a strided window: += -= with a view, with itself, with scalars, and fill",
                   "[views][strided]", std::uint8_t, float, double, std::int32_t) {
  using T = TestType;
  const bool quick = under_sanitizer();
  for (Index rows : heights()) {
    for (Index cols : widths()) {
      if (quick && rows * cols > 20000) continue;
      for (Index pad : pads<T>()) {
        const Win wo = random_win(rows, cols, pad);
        const std::vector<Index> pb = pads<T>();
        const Win wb = random_win(rows, cols, pb[static_cast<std::size_t>(cols) % pb.size()]);
        CAPTURE(describe(wo), describe(wb));
        HostMatrix<T> h = rand_m<T>(wo.R, wo.C);
        const HostMatrix<T> hb = rand_m<T>(wb.R, wb.C);
        auto M = to_device(h);
        const auto B = to_device(hb);
        const auto vb = B.block(wb.r0, wb.c0, rows, cols);
        const HostMatrix<T> eb = hb.block(wb.r0, wb.c0, rows, cols);
        auto w = M.block(wo.r0, wo.c0, rows, cols);
        const auto update = [&](auto op) {
          HostMatrix<T> win = h.block(wo.r0, wo.c0, rows, cols);
          h.block(wo.r0, wo.c0, rows, cols) = op(win);
        };

        w += vb;
        update([&](const HostMatrix<T>& x) { return ref2<T>(x, eb, [](double p, double q) { return p + q; }); });
        CHECK(same<T>(to_eigen(M), h));
        w -= vb;
        update([&](const HostMatrix<T>& x) { return ref2<T>(x, eb, [](double p, double q) { return p - q; }); });
        CHECK(same<T>(to_eigen(M), h));
        w += w;  // the very same window on both sides
        update([&](const HostMatrix<T>& x) { return ref2<T>(x, x, [](double p, double q) { return p + q; }); });
        CHECK(same<T>(to_eigen(M), h));
        w -= M.block(wo.r0, wo.c0, rows, cols);  // the same window through another view object
        update([&](const HostMatrix<T>& x) { return ref2<T>(x, x, [](double p, double q) { return p - q; }); });
        CHECK(same<T>(to_eigen(M), h));
        w += T(5);
        w *= T(3);
        update([&](const HostMatrix<T>& x) { return ref1<T>(x, [](double p) { return (p + 5) * 3; }); });
        CHECK(same<T>(to_eigen(M), h));
        w.fill(T(9));
        h.block(wo.r0, wo.c0, rows, cols).setConstant(T(9));
        CHECK(same<T>(to_eigen(M), h));
        CHECK(same<T>(to_eigen(B), hb));
      }
    }
  }
}

TEMPLATE_TEST_CASE("3-wide rows by the million, 1-wide columns, single long rows", "[views][strided]", std::uint8_t,
                   float, double, std::int32_t) {
  using T = TestType;
  const bool quick = under_sanitizer();
  const Index many = quick ? 5000 : Index(1) << 20;
  struct Case {
    Index R, C, r0, c0, rows, cols;
  };
  const std::vector<Case> cases = {
      {many, 7, 0, 1, many, 3},                          // 3 of 7 columns, at column 1
      {many + 1, 5, 1, 2, many, 3},                      // 3 of 5
      {many, 3, 0, 0, many, 1},                          // a column of a 3-wide matrix
      {4096, 1031, 3, 1029, 4093, 1},                    // the next-to-last column, an odd stride
      {many / 4, 6, 1, 1, many / 4 - 1, 4},              // 4 of 6
      {3, quick ? 30011 : 1000003, 0, 1, 3, quick ? 30009 : 1000001},  // long rows, odd stride
      {2, quick ? 40000 : 2000000, 1, 3, 1, quick ? 39990 : 1999990},  // one long row at an odd offset
  };
  for (const Case& c : cases) {
    const Win wa{c.R, c.C, c.r0, c.c0, c.rows, c.cols};
    CAPTURE(describe(wa));
    const HostMatrix<T> ha = rand_m<T>(c.R, c.C), hb = rand_m<T>(c.R, c.C);
    const auto A = to_device(ha);
    const auto B = to_device(hb);
    // b one column to the left where it can be, so its rows sit at another offset than a's.
    const Index cb = c.c0 > 0 ? c.c0 - 1 : c.c0;
    const auto va = A.block(c.r0, c.c0, c.rows, c.cols);
    const auto vb = B.block(c.r0, cb, c.rows, c.cols);
    const HostMatrix<T> ea = ha.block(c.r0, c.c0, c.rows, c.cols), eb = hb.block(c.r0, cb, c.rows, c.cols);
    poison_next<T>(c.rows, c.cols, A.stream());
    CHECK(same<T>(to_eigen(va + vb), ref2<T>(ea, eb, [](double x, double y) { return x + y; })));
    // In place, and a fill, on the same shape; the rest of the matrix must stay as it was.
    auto M = to_device(ha);
    HostMatrix<T> h = ha;
    auto w = M.block(c.r0, c.c0, c.rows, c.cols);
    w += vb;
    h.block(c.r0, c.c0, c.rows, c.cols) = ref2<T>(ea, eb, [](double x, double y) { return x + y; });
    CHECK(same<T>(to_eigen(M), h));
    w.fill(T(1));
    h.block(c.r0, c.c0, c.rows, c.cols).setConstant(T(1));
    CHECK(same<T>(to_eigen(M), h));
  }
}

TEMPLATE_TEST_CASE("dense windows that are not 16-byte aligned run as one long row", "[views][strided]",
                   std::uint8_t, float, double, std::int32_t) {
  using T = TestType;
  // Whole rows of a matrix from row 1 on (contiguous, but the first element is not aligned when
  // a row's bytes are not a multiple of 16), a single row at an odd column, and a window of a
  // wrapped pointer one element past an allocation's start.
  for (Index C : {Index(1), Index(3), Index(17), Index(255), Index(1001)}) {
    CAPTURE(C);
    const Index R = 37;
    const HostMatrix<T> ha = rand_m<T>(R, C), hb = rand_m<T>(R, C);
    const auto A = to_device(ha);
    const auto B = to_device(hb);
    const auto va = A.block(1, 0, R - 1, C);
    const auto vb = B.block(2, 0, R - 2, C);
    const HostMatrix<T> ea = ha.block(1, 0, R - 2, C), eb = hb.block(2, 0, R - 2, C);
    poison_next<T>(R - 2, C, A.stream());
    CHECK(same<T>(to_eigen(va.block(0, 0, R - 2, C) + vb), ref2<T>(ea, eb, [](double x, double y) { return x + y; })));
    if (C > 2) {
      const auto ra = A.block(5, 1, 1, C - 2), rb = B.block(7, 2, 1, C - 2);
      poison_next<T>(1, C - 2, A.stream());
      CHECK(same<T>(to_eigen(ra - rb), ref2<T>(HostMatrix<T>(ha.block(5, 1, 1, C - 2)), HostMatrix<T>(hb.block(7, 2, 1, C - 2)),
                                                 [](double x, double y) { return x - y; })));
    }
    auto M = to_device(ha);
    HostMatrix<T> h = ha;
    M.block(1, 0, R - 2, C) += vb;
    h.block(1, 0, R - 2, C) = ref2<T>(ea, eb, [](double x, double y) { return x + y; });
    CHECK(same<T>(to_eigen(M), h));
  }
  const Index n = 1000;
  T* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), (n + 1) * sizeof(T)) == cudaSuccess);
  {
    const HostMatrix<T> h = rand_m<T>(1, n + 1);
    REQUIRE(cudaMemcpy(d, h.data(), (n + 1) * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    const Stream s = Stream::create();
    const MatrixView<T> w = wrap(d + 1, 10, n / 10, n / 10, s);  // dense, one element past the start
    poison_next<T>(10, n / 10, s);
    const HostMatrix<T> e = Eigen::Map<const HostMatrix<T>>(h.data() + 1, 10, n / 10);
    CHECK(same<T>(to_eigen(w + w), ref2<T>(e, e, [](double x, double y) { return x + y; })));
    w += T(1);
    CHECK(same<T>(to_eigen(w), ref1<T>(e, [](double x) { return x + 1; })));
    s.synchronize();
  }
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEMPLATE_TEST_CASE("pitched foreign memory: rows near the padding, and the last byte of an allocation",
                   "[views][strided]", std::uint8_t, float) {
  using T = TestType;
  // Padding is never written (so initcheck sees any read of it), and the second buffer ends
  // exactly at the window's last element (so memcheck sees any read past it).
  const Index R = 29, C = 45;
  T* p = nullptr;
  std::size_t pitch = 0;
  REQUIRE(cudaMallocPitch(reinterpret_cast<void**>(&p), &pitch, C * sizeof(T), R) == cudaSuccess);
  const Index ld = static_cast<Index>(pitch / sizeof(T));
  const HostMatrix<T> h = rand_m<T>(R, C);
  REQUIRE(cudaMemcpy2D(p, pitch, h.data(), C * sizeof(T), C * sizeof(T), R, cudaMemcpyHostToDevice) == cudaSuccess);
  const Index n = (R - 1) * (C + 3) + C;  // an odd stride C + 3; the buffer ends with the window
  T* q = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&q), n * sizeof(T)) == cudaSuccess);
  const HostMatrix<T> hq = rand_m<T>(1, n);
  REQUIRE(cudaMemcpy(q, hq.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  {
    const Stream s = Stream::create();
    const MatrixView<T> w = wrap(p, R, C, ld, s);
    const MatrixView<T> v = wrap(q, R, C, C + 3, s);
    HostMatrix<T> hv(R, C);
    for (Index i = 0; i < R; ++i)
      for (Index j = 0; j < C; ++j) hv(i, j) = hq(0, i * (C + 3) + j);
    for (auto [c0a, c0b, cols] : std::vector<std::array<Index, 3>>{{1, 0, C - 1}, {0, 3, C - 3}, {2, 1, C - 2}, {C - 1, C - 1, 1}}) {
      CAPTURE(c0a, c0b, cols);
      const auto a = w.block(0, c0a, R, cols), b = v.block(0, c0b, R, cols);
      const HostMatrix<T> ea = h.block(0, c0a, R, cols), eb = hv.block(0, c0b, R, cols);
      poison_next<T>(R, cols, s);
      CHECK(same<T>(to_eigen(a + b), ref2<T>(ea, eb, [](double x, double y) { return x + y; })));
      poison_next<T>(R, cols, s);
      CHECK(same<T>(to_eigen(b - a), ref2<T>(eb, ea, [](double x, double y) { return x - y; })));
    }
    const HostMatrix<T> ea = h.block(0, 1, R, C - 1), eb = hv.block(0, 0, R, C - 1);
    w.block(0, 1, R, C - 1) += v.block(0, 0, R, C - 1);  // in place, into pitched memory
    CHECK(same<T>(to_eigen(w.block(0, 1, R, C - 1)), ref2<T>(ea, eb, [](double x, double y) { return x + y; })));
    CHECK(same<T>(to_eigen(w.col(0)), HostMatrix<T>(h.col(0))));
    s.synchronize();
  }
  REQUIRE(cudaFree(q) == cudaSuccess);
  REQUIRE(cudaFree(p) == cudaSuccess);
}

TEST_CASE("strided rows past 2^30 bytes go in column blocks; 2^31 rows of one element", "[views][strided][large]") {
  // Two rows of 2^30 + 7 bytes at column 3 (an odd stride): the launcher splits each row in
  // column blocks. Checked on the device against dense copies added by the flat kernel.
  {
    const Index C = (Index(1) << 30) + 11, cols = (Index(1) << 30) + 7;
    auto M = DeviceMatrix<std::uint8_t>::zeros(2, C);
    M.block(0, 0, 2, C).fill(std::uint8_t(3));
    M.block(1, 5, 1, 1000).fill(std::uint8_t(200));  // some values that wrap when doubled
    const auto v = M.block(0, 3, 2, cols);
    const DeviceMatrix<std::uint8_t> d(v);
    const DeviceMatrix<std::uint8_t> want = d + d;
    const DeviceMatrix<std::uint8_t> got = v + v;
    CHECK((got - want).max() == 0);  // u8 differences wrap: 0 everywhere only where equal
    CHECK(got.at(1, 2) == std::uint8_t(144));  // 200 + 200 mod 256
    CHECK(got.at(1, cols - 1) == std::uint8_t(6));
  }
  {
    const Index R = (Index(1) << 31) + 7;
    auto M = DeviceMatrix<std::uint8_t>::constant(R, 3, 1);
    M.col(1).fill(2);
    M.block(R - 1, 1, 1, 1).fill(100);
    const auto c = M.col(1);
    const DeviceMatrix<std::uint8_t> sum = c + c;
    CHECK(sum.rows() == R);
    CHECK(sum.min() == 4);
    CHECK(sum.max() == 200);
    CHECK(sum.at(R - 1, 0) == 200);
    M.col(1) += M.col(2);
    CHECK(M.col(1).at(R - 2, 0) == 3);
    CHECK(DeviceMatrix<std::uint8_t>(M.col(0)).max() == 1);  // neighbours untouched
    CHECK(DeviceMatrix<std::uint8_t>(M.col(2)).min() == 1);
  }
}
