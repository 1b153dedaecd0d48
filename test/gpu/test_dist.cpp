// ShardedMatrix over Communicator::local(): every visible GPU of this process, one rank each
// (one GPU is a valid group of size 1). Eigen is the oracle, on gathered results; shapes not
// divisible by the rank count, fewer rows than ranks, 0-size; mismatches; an aborted group.
#include "support/util.hpp"

#include <devmat/dist.hpp>

#include <cuda_runtime_api.h>

#include <cmath>

using namespace devmat;
using namespace devmat::test;

namespace {

// Destroyed at exit before the CUDA runtime (constructed after it), so its NCCL resources are
// freed (the memcheck leak check sees no leak).
Communicator& comm() {
  static Communicator c = Communicator::local();
  return c;
}

template <class T>
HostMatrix<T> gathered(const ShardedMatrix<T>& m) {
  std::vector<T> v = m.gather_to_host(0);
  REQUIRE(static_cast<Index>(v.size()) == m.rows() * m.cols());
  HostMatrix<T> h(m.rows(), m.cols());
  if (!v.empty()) std::copy(v.begin(), v.end(), h.data());
  return h;
}

template <class T>
ShardedMatrix<T> scatter(const HostMatrix<T>& h) {
  return ShardedMatrix<T>::scatter(h.data(), h.rows(), h.cols(), comm());
}

// Shapes around the rank count P: fewer rows than ranks, not divisible, 0-size, primes.
std::vector<std::pair<Index, Index>> dist_shapes() {
  const Index P = comm().size();
  std::vector<std::pair<Index, Index>> s = {{0, 0}, {0, 5}, {5, 0}, {1, 1}, {P, 3}, {P + 1, 13}, {2 * P + 1, 1},
                                            {37, 53}, {130, 67}, {257, 129}, {1000, 31}};
  if (P > 1) s.push_back({P - 1, 7});
  return s;
}

// Poisons the next allocation of each rank's block of a rows x cols sharded result.
template <class T>
void poison_sharded(Index rows, Index cols) {
  for (int r : comm().local_ranks()) {
    const detail::DeviceScope scope(comm().device(r));
    poison_next<T>(block_rows(rows, comm().size(), r), cols, comm().stream(r));
  }
}

template <class T>
void check_placement(const ShardedMatrix<T>& m) {
  for (int r : m.comm().local_ranks()) {
    const DeviceMatrix<T>& s = m.shard(r);
    CHECK(s.rows() == m.block_rows(r));
    CHECK(s.cols() == m.cols());
    if (s.empty()) continue;  // an empty result may carry no stream
    CHECK(s.stream() == m.comm().stream(r));
    cudaPointerAttributes a{};
    REQUIRE(cudaPointerGetAttributes(&a, s.data()) == cudaSuccess);
    CHECK(a.device == m.comm().device(r));
  }
}

}  // namespace

TEST_CASE("dist: the communicator", "[dist]") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  CHECK(comm().size() == n);
  CHECK(comm().rank() == 0);
  CHECK(static_cast<int>(comm().local_ranks().size()) == n);
  for (int r = 0; r < n; ++r) {
    CHECK(comm().device(r) == r);
    CHECK(comm().is_local(r));
  }
  CHECK_THROWS_AS(comm().device(n), cuda_error);
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  REQUIRE(nvls != nullptr);
  CHECK(std::string(nvls) == "0");
  // Row blocks: sizes sum to rows, offsets are prefix sums, the first rows % P ranks hold one more.
  for (Index rows : {0, 1, 2, 3, 7, 100, 101}) {
    Index total = 0;
    for (int r = 0; r < 3; ++r) {
      CHECK(block_offset(rows, 3, r) == total);
      total += block_rows(rows, 3, r);
    }
    CHECK(total == rows);
  }
}

TEMPLATE_TEST_CASE("dist: scatter and gather", "[dist]", float, std::int32_t, double) {
  using T = TestType;
  const int P = comm().size();
  for (auto [rows, cols] : dist_shapes()) {
    CAPTURE(rows, cols, P);
    const HostMatrix<T> h = random_matrix<T>(rows, cols, -100, 100);
    poison_sharded<T>(rows, cols);
    const ShardedMatrix<T> m = scatter(h);
    CHECK(m.rows() == rows);
    CHECK(m.cols() == cols);
    check_placement(m);
    Index total = 0;
    for (int r = 0; r < P; ++r) {
      CHECK(m.row_offset(r) == total);
      total += m.block_rows(r);
    }
    CHECK(total == rows);
    CHECK(gathered(m) == h);
    // From a device matrix on the last rank, gathered to the last rank's device.
    const int root = P - 1;
    DeviceMatrix<T> d;
    {
      const detail::DeviceScope scope(comm().device(root));
      d = DeviceMatrix<T>::from_host(h.data(), rows, cols, comm().stream(root));
    }
    const ShardedMatrix<T> m2 = ShardedMatrix<T>::scatter(d, comm(), root);
    check_placement(m2);
    const DeviceMatrix<T> back = m2.gather(root);
    m2.synchronize();
    const std::vector<T> v = back.to_vector();
    CHECK(std::vector<T>(h.data(), h.data() + h.size()) == v);
  }
}

TEST_CASE("dist: the caller's device is kept", "[dist]") {
  const int last = comm().size() - 1;
  REQUIRE(cudaSetDevice(last) == cudaSuccess);
  const HostMatrix<float> h = random_matrix<float>(33, 17);
  const auto m = scatter(h);
  const auto t = (m + m).transpose();
  CHECK(std::abs(t.sum() - 2 * h.cast<double>().sum()) <= 1e-4 * (1 + 2 * h.cast<double>().cwiseAbs().sum()));
  int now = -1;
  REQUIRE(cudaGetDevice(&now) == cudaSuccess);
  CHECK(now == last);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("dist: expressions on one shard run on its device, from any current device", "[dist]") {
  const int P = comm().size(), last = P - 1;
  auto m = ShardedMatrix<float>::constant(2 * P, 3, 1.0f, comm());
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  m.shard(last) += 2.0f;                             // the last device's memory, from device 0
  const DeviceMatrix<float> e = m.shard(last) * 2.0f;  // a new matrix on the shard's stream
  DeviceMatrix<float> ones;
  {
    const detail::DeviceScope scope(comm().device(last));
    ones = DeviceMatrix<float>::constant(3, 2, 1.0f, comm().stream(last));
  }
  const DeviceMatrix<float> prod = m.shard(last) * ones;  // a product on the shard's device
  int now = -1;
  REQUIRE(cudaGetDevice(&now) == cudaSuccess);
  CHECK(now == 0);
  CHECK(e.stream() == comm().stream(last));
  CHECK(m.sum() == static_cast<float>(6 * P + 12));
  m.synchronize();
  const detail::DeviceScope scope(comm().device(last));
  CHECK(e.to_vector() == std::vector<float>(6, 6.0f));
  CHECK(prod.stream() == comm().stream(last));
  CHECK(prod.to_vector() == std::vector<float>(4, 9.0f));
}

TEST_CASE("dist: element-wise and expressions, shard by shard", "[dist]") {
  for (auto [rows, cols] : dist_shapes()) {
    CAPTURE(rows, cols);
    const HostMatrix<float> ha = random_matrix<float>(rows, cols), hb = random_matrix<float>(rows, cols);
    const auto a = scatter(ha), b = scatter(hb);
    poison_sharded<float>(rows, cols);
    const auto sum = a + b;
    check_placement(sum);
    CHECK(gathered(sum) == HostMatrix<float>(ha + hb));
    CHECK(gathered(a - b) == HostMatrix<float>(ha - hb));
    CHECK(gathered(-a) == HostMatrix<float>(-ha));
    CHECK(gathered(2.0f * a) == HostMatrix<float>(2.0f * ha));
    const auto mag = shardwise([](const DeviceMatrix<float>& x, const DeviceMatrix<float>& y) {
      return Expr<float>(sqrt(square(x) + square(y)));
    }, a, b);
    const HostMatrix<float> ref = (ha.array().square() + hb.array().square()).sqrt().matrix();
    CHECK(max_abs_diff(gathered(mag), ref) <= 1e-6);
    const auto mask = shardwise([](const DeviceMatrix<float>& x) { return Expr<std::uint8_t>(x > 0.0f); }, a);
    const HostMatrix<std::uint8_t> hmask = (ha.array() > 0.0f).cast<std::uint8_t>().matrix();
    CHECK(gathered(mask) == hmask);
    auto c = a.transpose().transpose();  // a copy through two exchanges
    c += b;
    c -= a;
    c *= 3.0f;
    c += 1.0f;
    c -= 2.0f;
    c /= 2.0f;
    const HostMatrix<float> href = (((hb * 3.0f).array() + 1.0f - 2.0f) / 2.0f).matrix();
    CHECK(max_abs_diff(gathered(c), href) <= 1e-5);
  }
}

TEMPLATE_TEST_CASE("dist: reductions", "[dist]", float, double, std::int32_t) {
  using T = TestType;
  using S = sum_t<T>;
  for (auto [rows, cols] : dist_shapes()) {
    CAPTURE(rows, cols);
    const HostMatrix<T> h = random_matrix<T>(rows, cols, -50, 50);
    const auto m = scatter(h);
    const double ref_sum = h.template cast<double>().sum();
    const double tol = std::is_integral_v<T> ? 0.0 : 1e-5 * (1.0 + h.template cast<double>().cwiseAbs().sum());
    CHECK(std::abs(static_cast<double>(m.sum()) - ref_sum) <= tol);
    if (rows * cols == 0) {
      CHECK_THROWS_AS(m.min(), shape_error);
      CHECK_THROWS_AS(m.max(), shape_error);
      CHECK_THROWS_AS(m.mean(), shape_error);
    } else {
      CHECK(m.min() == h.minCoeff());
      CHECK(m.max() == h.maxCoeff());
      CHECK(std::abs(m.mean() - ref_sum / static_cast<double>(h.size())) <= 1e-9 + tol / static_cast<double>(h.size()));
    }
    poison_sharded<S>(rows, 1);
    const ShardedMatrix<S> rs = m.row_sums();
    check_placement(rs);
    const HostMatrix<S> hrs = gathered(rs);
    const ReplicatedMatrix<S> cs = m.col_sums();
    CHECK(cs.rows() == 1);
    CHECK(cs.cols() == cols);
    const Eigen::MatrixXd ref_rows = h.template cast<double>().rowwise().sum();
    const Eigen::MatrixXd ref_cols = h.template cast<double>().colwise().sum();
    const double rtol = std::is_integral_v<T> ? 0.0 : 1e-4 * (1.0 + 50.0 * static_cast<double>(std::max(rows, cols)));
    CHECK(max_abs_diff(hrs.template cast<double>(), ref_rows) <= rtol);
    m.synchronize();
    for (int r : comm().local_ranks()) {
      const detail::DeviceScope scope(comm().device(r));
      const std::vector<S> v = cs.copy(r).to_vector();
      Eigen::MatrixXd got(1, cols);
      for (Index j = 0; j < cols; ++j) got(0, j) = static_cast<double>(v[static_cast<std::size_t>(j)]);
      CHECK(max_abs_diff(got, ref_cols) <= rtol);
    }
  }
}

TEMPLATE_TEST_CASE("dist: transpose", "[dist]", float, std::uint8_t, double) {
  using T = TestType;
  for (auto [rows, cols] : dist_shapes()) {
    CAPTURE(rows, cols);
    const HostMatrix<T> h = random_matrix<T>(rows, cols, 0, 200);
    const auto m = scatter(h);
    poison_sharded<T>(cols, rows);
    const auto t = m.transpose();
    CHECK(t.rows() == cols);
    CHECK(t.cols() == rows);
    check_placement(t);
    CHECK(gathered(t) == HostMatrix<T>(h.transpose()));
  }
}

namespace {
template <class T>
double product_error(const HostMatrix<T>& got, const Eigen::MatrixXd& ref, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  if (got.size() == 0) return 0;
  return (got.template cast<double>() - ref).norm() / (1.0 + a.norm() * b.norm());
}
}  // namespace

TEMPLATE_TEST_CASE("dist: products", "[dist]", float, double) {
  using T = TestType;
  const Index P = comm().size();
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  const std::vector<std::array<Index, 3>> shapes = {
      {0, 5, 7}, {5, 0, 7}, {1, 1, 1}, {P, 3, 2}, {P + 1, 2 * P + 1, 13}, {37, 600, 29}, {130, 257, 67}, {3, 700, 5}};
  for (auto [M, K, N] : shapes) {
    CAPTURE(M, K, N);
    const HostMatrix<T> ha = random_matrix<T>(M, K), hb = random_matrix<T>(K, N), hc = random_matrix<T>(M, N);
    const Eigen::MatrixXd a = ha.template cast<double>(), b = hb.template cast<double>(), c0 = hc.template cast<double>();
    const auto A = scatter(ha);
    const auto Brep = ReplicatedMatrix<T>::from_host(hb.data(), K, N, comm());
    const auto Bsh = scatter(hb);
    poison_sharded<T>(M, N);
    const ShardedMatrix<T> C1 = A * Brep;
    check_placement(C1);
    CHECK(product_error(gathered(C1), a * b, a, b) <= tol);
    poison_sharded<T>(M, N);
    const ShardedMatrix<T> C2 = A * Bsh;
    check_placement(C2);
    CHECK(product_error(gathered(C2), a * b, a, b) <= tol);
    // alpha, beta, into an existing C.
    auto C3 = scatter(hc);
    gemm(T(2), A, Bsh, T(-0.5), C3);
    CHECK(product_error(gathered(C3), 2 * a * b - 0.5 * c0, a, b) <= tol);
    auto C4 = scatter(hc);
    gemm(T(0.5), A, Brep, T(3), C4);
    CHECK(product_error(gathered(C4), 0.5 * a * b + 3 * c0, a, b) <= tol);
    // op(B) = B^T with B replicated: B given as N x K.
    const HostMatrix<T> hbt = hb.transpose();
    const auto Bt = ReplicatedMatrix<T>::from_host(hbt.data(), N, K, comm());
    ShardedMatrix<T> C5;
    gemm(T(1), A, Bt, T(0), C5, Op::transpose);
    CHECK(product_error(gathered(C5), a * b, a, b) <= tol);
    // B broadcast from the last rank's device.
    DeviceMatrix<T> db;
    {
      const detail::DeviceScope scope(comm().device(static_cast<int>(P) - 1));
      db = DeviceMatrix<T>::from_host(hb.data(), K, N, comm().stream(static_cast<int>(P) - 1));
    }
    const auto Bb = ReplicatedMatrix<T>::broadcast(db, comm(), static_cast<int>(P) - 1);
    CHECK(product_error(gathered(A * Bb), a * b, a, b) <= tol);
  }
}

TEST_CASE("dist: int32 products", "[dist]") {
  const HostMatrix<std::int32_t> ha = random_matrix<std::int32_t>(41, 300, -9, 9), hb = random_matrix<std::int32_t>(300, 23, -9, 9);
  const auto A = scatter(ha);
  const HostMatrix<std::int32_t> ref = ha * hb;
  CHECK(gathered(A * scatter(hb)) == ref);
  CHECK(gathered(A * ReplicatedMatrix<std::int32_t>::from_host(hb.data(), 300, 23, comm())) == ref);
}

TEST_CASE("dist: shape mismatches throw before anything runs", "[dist]") {
  const auto a = ShardedMatrix<float>::constant(10, 4, 1.0f, comm());
  const auto b = ShardedMatrix<float>::constant(10, 5, 1.0f, comm());
  CHECK_THROWS_AS(a + b, shape_error);
  auto c = a;
  CHECK_THROWS_AS(c += b, shape_error);
  CHECK_THROWS_AS(a * b, shape_error);  // 10x4 * 10x5
  CHECK_THROWS_AS(a * ReplicatedMatrix<float>::from_host(std::vector<float>(15, 1.0f).data(), 5, 3, comm()), shape_error);
  auto wrong_c = ShardedMatrix<float>::zeros(10, 7, comm());
  const auto bt = ShardedMatrix<float>::constant(4, 5, 1.0f, comm());
  CHECK_THROWS_AS(gemm(1.0f, a, bt, 0.0f, wrong_c), shape_error);
  CHECK_THROWS_WITH(a - b, contains("10x4"));
  CHECK_THROWS_AS(ShardedMatrix<float>::scatter(std::vector<float>(3), 2, 2, comm()), shape_error);
  CHECK_THROWS_AS(a.gather(comm().size()), shape_error);
  // Another group: operands must share their communicator.
  const Communicator other = Communicator::local({0});
  const auto d = ShardedMatrix<float>::constant(10, 4, 1.0f, other);
  CHECK_THROWS_WITH(a + d, contains("different communicators"));
  CHECK(a.sum() == 40.0f);  // the group still works
}

TEST_CASE("dist: an aborted communicator fails every operation", "[dist]") {
  Communicator c = Communicator::local();
  const auto m = ShardedMatrix<float>::constant(9, 3, 2.0f, c);
  CHECK(m.sum() == 54.0f);
  CHECK_FALSE(c.aborted());
  c.abort();
  CHECK(c.aborted());
  CHECK_THROWS_AS(m.sum(), cuda_error);
  CHECK_THROWS_WITH(m.transpose(), contains("aborted"));
  CHECK_THROWS_AS(m.gather_to_host(), cuda_error);
  CHECK_THROWS_AS(c.synchronize(), cuda_error);
}
