// Element-wise operations against Eigen on awkward shapes, every type, outputs poisoned.
#include "support/util.hpp"

#include <algorithm>
#include <cmath>

using namespace devmat;
using namespace devmat::test;

namespace {
// Values small enough that int and uint8 arithmetic wraps the same way on both sides.
template <class T> double lo() { return std::is_unsigned_v<T> ? 0 : -100; }
template <class T> double hi() { return 100; }

template <class T, class Op, class Ref>
void check_binary(const char* name, Op op, Ref ref) {
  for (auto [r, c] : awkward_shapes()) {
    CAPTURE(name, shape(r, c));
    const HostMatrix<T> ha = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const HostMatrix<T> hb = random_matrix<T>(r, c, lo<T>(), hi<T>());
    auto a = to_device(ha);
    auto b = to_device(hb);
    poison_next<T>(r, c, a.stream());
    DeviceMatrix<T> out = op(a, b);
    const HostMatrix<T> expect = ref(ha, hb);
    REQUIRE(out.rows() == r);
    REQUIRE(out.cols() == c);
    CHECK(to_eigen(out) == expect);
    CHECK(to_eigen(a) == ha);  // operands intact
    CHECK(to_eigen(b) == hb);
  }
}
}  // namespace

TEMPLATE_TEST_CASE("A + B, A - B, A += B, A -= B, -A", "[elementwise]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  using H = HostMatrix<T>;
  check_binary<T>("A + B", [](auto& a, auto& b) { return a + b; }, [](const H& a, const H& b) { return H(a + b); });
  check_binary<T>("A - B", [](auto& a, auto& b) { return a - b; }, [](const H& a, const H& b) { return H(a - b); });
  check_binary<T>("A += B", [](auto& a, auto& b) { auto c = a.clone(); c += b; return c; },
                  [](const H& a, const H& b) { return H(a + b); });
  check_binary<T>("A -= B", [](auto& a, auto& b) { auto c = a.clone(); c -= b; return c; },
                  [](const H& a, const H& b) { return H(a - b); });
  check_binary<T>("(A + B) - A (temporary reused)", [](auto& a, auto& b) { return (a + b) - a; },
                  [](const H& a, const H& b) { return H((a + b) - a); });
  check_binary<T>("-A", [](auto& a, auto&) { return -a; }, [](const H& a, const H&) { return H(-a); });
}

TEMPLATE_TEST_CASE("scalar operations", "[elementwise]", float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  using H = HostMatrix<T>;
  const T s = T(3);
  check_binary<T>("A * s", [&](auto& a, auto&) { return a * s; }, [&](const H& a, const H&) { return H(a * s); });
  check_binary<T>("s * A", [&](auto& a, auto&) { return s * a; }, [&](const H& a, const H&) { return H(s * a); });
  check_binary<T>("A + s", [&](auto& a, auto&) { return a + s; }, [&](const H& a, const H&) { return H(a.array() + s); });
  check_binary<T>("A - s", [&](auto& a, auto&) { return a - s; }, [&](const H& a, const H&) { return H(a.array() - s); });
  check_binary<T>("s - A", [&](auto& a, auto&) { return s - a; }, [&](const H& a, const H&) { return H(s - a.array()); });
  check_binary<T>("A / s", [&](auto& a, auto&) { return a / s; }, [&](const H& a, const H&) { return H(a / s); });
  check_binary<T>("(A * s) / s on a temporary", [&](auto& a, auto&) { return (a * s) / s; },
                  [&](const H& a, const H&) { return H(H(a * s) / s); });
  if constexpr (std::is_integral_v<T>) {
    auto a = DeviceMatrix<T>::constant(3, 3, T(1));
    CHECK_THROWS_AS(a / T(0), std::invalid_argument);
    CHECK_THROWS_AS(a /= T(0), std::invalid_argument);
    CHECK((to_eigen(a).array() == T(1)).all());
  }
}

TEMPLATE_TEST_CASE("image building blocks: abs, clamp, cwise ops, threshold", "[elementwise]", float, double,
                   std::int32_t, std::uint8_t) {
  using T = TestType;
  using H = HostMatrix<T>;
  check_binary<T>("abs", [](auto& a, auto&) { return a.abs(); }, [](const H& a, const H&) { return H(a.cwiseAbs()); });
  check_binary<T>("clamp", [](auto& a, auto&) { return a.clamp(T(10), T(50)); },
                  [](const H& a, const H&) { return H(a.cwiseMax(T(10)).cwiseMin(T(50))); });
  check_binary<T>("cwise_product", [](auto& a, auto& b) { return a.cwise_product(b); },
                  [](const H& a, const H& b) { return H(a.cwiseProduct(b)); });
  check_binary<T>("cwise_max", [](auto& a, auto& b) { return a.cwise_max(b); },
                  [](const H& a, const H& b) { return H(a.cwiseMax(b)); });
  check_binary<T>("cwise_min", [](auto& a, auto& b) { return a.cwise_min(b); },
                  [](const H& a, const H& b) { return H(a.cwiseMin(b)); });
  check_binary<T>("cwise_quotient", [](auto& a, auto& b) { return a.cwise_quotient(b); },
                  [](const H& a, const H& b) {
                    H q(a.rows(), a.cols());
                    for (Index i = 0; i < a.size(); ++i) {
                      if constexpr (std::is_integral_v<T>)
                        q.data()[i] = b.data()[i] == 0 ? T(0) : T(a.data()[i] / b.data()[i]);
                      else
                        q.data()[i] = a.data()[i] / b.data()[i];
                    }
                    return q;
                  });
  for (auto [r, c] : awkward_shapes(2)) {
    CAPTURE(shape(r, c));
    const H ha = random_matrix<T>(r, c, lo<T>(), hi<T>());
    const auto a = to_device(ha);  // before the poison, which the result must take (same size for uint8)
    poison_next<std::uint8_t>(r, c, a.stream());
    const HostMatrix<std::uint8_t> got = to_eigen(a.threshold(T(20)));
    const HostMatrix<std::uint8_t> want = (ha.array() > T(20)).select(255, HostMatrix<std::uint8_t>::Zero(r, c)).template cast<std::uint8_t>();
    CHECK(got == want);
  }
}

TEST_CASE("cast<U>() rounds to nearest even and saturates (OpenCV convertTo)") {
  const std::vector<float> f = {-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 254.6f, 255.5f, 300.f, -7.f, NAN, INFINITY, -INFINITY, 1e10f};
  auto d = DeviceMatrix<float>::from_vector(f, 1, static_cast<Index>(f.size()));
  const std::vector<std::uint8_t> u8 = {0, 0, 0, 2, 2, 255, 255, 255, 0, 0, 255, 0, 255};
  CHECK(d.cast<std::uint8_t>().to_vector() == u8);
  const std::vector<std::int32_t> i32 = {-2, 0, 0, 2, 2, 255, 256, 300, -7, 0, 2147483647, -2147483647 - 1, 2147483647};
  CHECK(d.cast<std::int32_t>().to_vector() == i32);
  auto i = DeviceMatrix<std::int32_t>::from_vector({-5, 0, 17, 300, 70000}, 1, 5);
  CHECK(i.cast<std::uint8_t>().to_vector() == std::vector<std::uint8_t>{0, 0, 17, 255, 255});
  CHECK(i.cast<double>().to_vector() == std::vector<double>{-5, 0, 17, 300, 70000});
  for (auto [r, c] : awkward_shapes(4)) {
    CAPTURE(shape(r, c));
    const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(r, c, 0, 255);
    auto g = to_device(h);
    poison_next<float>(r, c, g.stream());
    CHECK(to_eigen(g.cast<float>()) == HostMatrix<float>(h.cast<float>()));
    poison_next<float>(r, c, g.stream());
    poison_next<std::uint8_t>(r, c, g.stream());
    CHECK(to_eigen(g.cast<float>().cast<std::uint8_t>()) == h);
    poison_next<std::int32_t>(r, c, g.stream());
    poison_next<double>(r, c, g.stream());
    CHECK(to_eigen(g.cast<std::int32_t>().cast<double>()) == HostMatrix<double>(h.cast<double>()));
  }
}

TEST_CASE("element-wise add at sizes past 2^31 bytes", "[large]") {
  const Index r = 1 << 14, c = (1 << 15) + 3;  // 2.1 GB of float per matrix
  auto a = DeviceMatrix<float>::constant(r, c, 1.25f);
  auto b = DeviceMatrix<float>::constant(r, c, 2.5f);
  auto s = a + b;
  std::vector<float> v = s.to_vector();
  REQUIRE(v.size() == static_cast<std::size_t>(r * c));
  CHECK(std::count(v.begin(), v.end(), 3.75f) == r * c);
}
