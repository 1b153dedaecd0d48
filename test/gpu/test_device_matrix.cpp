// DeviceMatrix<T>: construction, copies, moves, host transfers and Eigen conversions.
#include "support/util.hpp"

using namespace devmat;
using namespace devmat::test;

TEMPLATE_TEST_CASE("from_host / to_vector / to_eigen round-trip every shape", "[matrix]", float, double,
                   std::int32_t, std::uint8_t) {
  for (auto [r, c] : awkward_shapes()) {
    CAPTURE(shape(r, c));
    const HostMatrix<TestType> h = random_matrix<TestType>(r, c, 0, 100);
    poison_next<TestType>(r, c, Stream::per_thread());
    auto d = to_device(h);
    REQUIRE(d.rows() == r);
    REQUIRE(d.cols() == c);
    REQUIRE(d.size() == r * c);
    CHECK(to_eigen(d) == h);
    std::vector<TestType> v(h.data(), h.data() + h.size());
    poison_next<TestType>(r, c, Stream::per_thread());
    CHECK(DeviceMatrix<TestType>::from_vector(v, r, c).to_vector() == v);
  }
}

TEST_CASE("to_device takes column-major matrices and expressions") {
  Eigen::MatrixXd col = Eigen::MatrixXd::Random(37, 53);  // column-major
  HostMatrix<double> row = col;
  CHECK(to_eigen(to_device(col)) == row);
  CHECK(to_eigen(to_device(col.transpose())) == HostMatrix<double>(col.transpose()));
  CHECK(max_abs_diff(to_eigen(to_device(2.0 * col.block(1, 2, 5, 7))), HostMatrix<double>(2.0 * col.block(1, 2, 5, 7))) == 0);
}

TEMPLATE_TEST_CASE("zeros, constant and fill", "[matrix]", float, double, std::int32_t, std::uint8_t) {
  for (auto [r, c] : awkward_shapes(2)) {
    CAPTURE(shape(r, c));
    poison_next<TestType>(r, c, Stream::per_thread());
    CHECK(to_eigen(DeviceMatrix<TestType>::zeros(r, c)) == HostMatrix<TestType>::Zero(r, c));
    poison_next<TestType>(r, c, Stream::per_thread());
    CHECK(to_eigen(DeviceMatrix<TestType>::constant(r, c, TestType(7))) == HostMatrix<TestType>::Constant(r, c, TestType(7)));
    poison_next<TestType>(r, c, Stream::per_thread());
    DeviceMatrix<TestType> m(r, c);
    m.fill(TestType(3));
    CHECK(to_eigen(m) == HostMatrix<TestType>::Constant(r, c, TestType(3)));
  }
}

TEST_CASE("copies are deep, moves transfer, clone keeps the stream") {
  const HostMatrix<float> h = random_matrix<float>(129, 67);
  auto a = to_device(h);
  DeviceMatrix<float> b = a;  // deep
  b += b;
  CHECK(to_eigen(a) == h);
  CHECK(to_eigen(b) == HostMatrix<float>(2 * h));
  DeviceMatrix<float> c;
  c = a;
  CHECK(c.data() != a.data());
  CHECK(to_eigen(c) == h);
  poison_next<float>(129, 67, a.stream());
  auto d = a.clone();
  CHECK(d.stream() == a.stream());
  CHECK(d.data() != a.data());
  CHECK(to_eigen(d) == h);
  const float* p = a.data();
  DeviceMatrix<float> e = std::move(a);
  CHECK(e.data() == p);
  CHECK(a.empty());
  CHECK(to_eigen(e) == h);
  e = e;  // self-assignment keeps the data
  CHECK(to_eigen(e) == h);
}

TEST_CASE("matrices on explicit and wrapped streams") {
  Stream s = Stream::create();
  CHECK(s.owning());
  const HostMatrix<double> h = random_matrix<double>(300, 301);
  auto a = to_device(h, s);
  CHECK(a.stream() == s);
  auto b = a * 2.0;
  CHECK(b.stream() == s);
  CHECK(to_eigen(b) == HostMatrix<double>(2.0 * h));

  cudaStream_t raw;
  REQUIRE(cudaStreamCreate(&raw) == cudaSuccess);
  {
    Stream w = Stream::wrap(raw);
    CHECK_FALSE(w.owning());
    CHECK(w.native() == raw);
    auto c = DeviceMatrix<double>::constant(10, 10, 1.5, w);
    CHECK((to_eigen(c).array() == 1.5).all());
  }
  REQUIRE(cudaStreamSynchronize(raw) == cudaSuccess);
  cudaStreamDestroy(raw);
}
