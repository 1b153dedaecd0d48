// gemm and operator* against Eigen in double: every configuration compiled in, the known
// failure modes of tiled kernels by name, random awkward shapes, all op combinations,
// alpha/beta, aliasing, shape errors and streams. Outputs are poisoned before each product.
#include "support/util.hpp"

#include "dispatch/gemm_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

using Ref = HostMatrix<double>;

const char* op_name(Op op) { return op == Op::none ? "N" : "T"; }

template <class T> constexpr bool kIsInt = std::is_integral_v<T>;
// Integers stay small, so that int32 results are exact and far from overflow.
template <class T> double lo() { return kIsInt<T> ? -8 : -1; }
template <class T> double hi() { return kIsInt<T> ? 8 : 1; }

/// (alpha, beta) pairs: the plain product, C += A*B, and general values.
template <class T>
std::pair<T, T> scalars(int i) {
  static const double f[][2] = {{1, 0}, {1, 1}, {-1.5, 0.5}, {0.75, -2}, {2, 0}};
  static const double n[][2] = {{1, 0}, {1, 1}, {-2, 3}, {3, 0}, {1, -1}};
  const auto& s = kIsInt<T> ? n[i % 5] : f[i % 5];
  return {static_cast<T>(s[0]), static_cast<T>(s[1])};
}

struct Case {
  Index m, n, k;
  Op op_a = Op::none, op_b = Op::none;
  int scalars = 0;  // index into scalars<T>()
};

std::string describe(const Case& c, int config, int splits, const char* how) {
  std::ostringstream os;
  os << how << " m=" << c.m << " n=" << c.n << " k=" << c.k << " op_a=" << op_name(c.op_a)
     << " op_b=" << op_name(c.op_b) << " scalars#" << c.scalars << " config=" << config << " splits=" << splits;
  return os.str();
}

/// The stored matrix whose op() is rows x cols.
template <class T>
HostMatrix<T> stored(Index rows, Index cols, Op op) {
  return op == Op::none ? random_matrix<T>(rows, cols, lo<T>(), hi<T>()) : random_matrix<T>(cols, rows, lo<T>(), hi<T>());
}

template <class T>
Ref op_of(const HostMatrix<T>& s, Op op) {
  return op == Op::none ? Ref(s.template cast<double>()) : Ref(s.transpose().template cast<double>());
}

/// Checks got == alpha op(A) op(B) + beta C0, computed in double. Integers: exactly. Floats:
/// finite everywhere (an unwritten, poisoned element is NaN), each element within
/// g*(|alpha| |op(A)_i.| |op(B)_.j| + |beta| |C0_ij|), which bounds the rounding error of any
/// summation order, and the normalised error ||C - C_ref||_F within
/// g*(|alpha| ||A||_F ||B||_F + |beta| ||C0||_F), with g = (2k + 32) eps.
template <class T>
void check_product(const HostMatrix<T>& got, const Ref& A, const Ref& B, double alpha, double beta, const Ref& C0) {
  const Index m = A.rows(), n = B.cols(), k = A.cols();
  REQUIRE(got.rows() == m);
  REQUIRE(got.cols() == n);
  Ref ref(m, n);
  ref.noalias() = A * B;
  ref *= alpha;
  if (beta != 0) ref += beta * C0;
  const Ref g = got.template cast<double>();
  if constexpr (kIsInt<T>) {
    const Index wrong = (g.array() != ref.array()).count();
    CHECK(wrong == 0);
  } else {
    const double eps = std::numeric_limits<T>::epsilon();
    const double gamma = (2.0 * static_cast<double>(k) + 32.0) * eps;
    const Eigen::VectorXd a_norm = A.rowwise().norm();
    const Eigen::RowVectorXd b_norm = B.colwise().norm();
    Index bad = 0, bad_i = -1, bad_j = -1;
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) {
        const double c0 = beta != 0 ? std::abs(beta * C0(i, j)) : 0.0;
        const double bound = gamma * (std::abs(alpha) * a_norm(i) * b_norm(j) + c0);
        if (!(std::abs(g(i, j) - ref(i, j)) <= bound)) {  // NaN fails too
          if (bad++ == 0) bad_i = i, bad_j = j;
        }
      }
    INFO("first bad element (" << bad_i << ", " << bad_j << "): got "
                               << (bad ? g(bad_i, bad_j) : 0.0) << ", want " << (bad ? ref(bad_i, bad_j) : 0.0));
    CHECK(bad == 0);
    const double err = (g - ref).norm();
    const double scale = std::abs(alpha) * A.norm() * B.norm() + (beta != 0 ? std::abs(beta) * C0.norm() : 0.0);
    CHECK(err <= gamma * scale);
  }
}

/// One product through gemm (or gemm_forced when config >= 0), C poisoned when beta == 0.
template <class T>
void run_case(const Case& c, int config = -1, int splits = 0) {
  INFO(describe(c, config, splits, "gemm"));
  const auto [alpha, beta] = scalars<T>(c.scalars);
  const HostMatrix<T> ha = stored<T>(c.m, c.k, c.op_a), hb = stored<T>(c.k, c.n, c.op_b);
  const HostMatrix<T> hc = random_matrix<T>(c.m, c.n, lo<T>(), hi<T>());
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  DeviceMatrix<T> C = beta == T(0) ? DeviceMatrix<T>::constant(c.m, c.n, poison_value<T>()) : to_device(hc);
  detail::gemm_forced(config, splits, alpha, A, B, beta, C, c.op_a, c.op_b);
  check_product(to_eigen(C), op_of(ha, c.op_a), op_of(hb, c.op_b), alpha, beta, hc.template cast<double>());
  CHECK(to_eigen(A) == ha);  // operands intact
  CHECK(to_eigen(B) == hb);
}

/// One product through operator*, its result's memory poisoned first.
template <class T>
void run_operator(Index m, Index n, Index k) {
  INFO(describe({m, n, k}, -1, 0, "operator*"));
  const HostMatrix<T> ha = random_matrix<T>(m, k, lo<T>(), hi<T>()), hb = random_matrix<T>(k, n, lo<T>(), hi<T>());
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  poison_next<T>(m, n, A.stream());
  const DeviceMatrix<T> C = A * B;
  CHECK(C.stream() == A.stream());
  check_product(to_eigen(C), op_of(ha, Op::none), op_of(hb, Op::none), 1.0, 0.0, Ref());
}

const Op kOps[2] = {Op::none, Op::transpose};

/// One float product through gemm in each of the four operand layouts, alpha and beta rotating
/// with `rot`; under a sanitizer (quick) one layout in four.
void run_float_layouts(Index m, Index n, Index k, int& rot, bool quick) {
  for (Op op_a : kOps)
    for (Op op_b : kOps) {
      const int r = rot++;
      if (quick && r % 4 != 0) continue;
      run_case<float>({m, n, k, op_a, op_b, r % 5});
    }
}

/// A dimension drawn to break tilings: tile edges, odd sizes that break 16-byte rows, primes;
/// mostly small so that the Eigen reference stays fast.
Index awkward_dim() {
  static const Index special[] = {0,  1,  2,  3,   4,   7,   8,   9,   15,  16,  17,  31,  32,  33, 63,
                                  64, 65, 127, 128, 129, 255, 256, 257, 511, 513, 803, 804, 1023, 1025};
  std::uniform_real_distribution<double> u(0, 1);
  const double x = u(rng());
  auto uniform = [](Index a, Index b) { return std::uniform_int_distribution<Index>(a, b)(rng()); };
  if (x < 0.25) return special[uniform(0, static_cast<Index>(std::size(special)) - 1)];
  if (x < 0.65) return uniform(1, 100);
  if (x < 0.90) return uniform(101, 500);
  return uniform(501, 1500);
}

/// The index of the configuration called `name` among `configs`, or -1.
int config_index(const std::vector<detail::GemmConfigInfo>& configs, const std::string& name) {
  for (int i = 0; i < static_cast<int>(configs.size()); ++i)
    if (configs[static_cast<std::size_t>(i)].name == name) return i;
  return -1;
}

}  // namespace

// ---------------------------------------------------------------- the known failure modes
TEMPLATE_TEST_CASE("regression 1: residual tiles are zero-filled (47x804 * 804x53)", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  const auto configs = detail::gemm_configs<T>();
  for (int cfg = -1; cfg < static_cast<int>(configs.size()); ++cfg)
    for (int splits : {1, 0, 3})
      for (Op op_a : kOps)
        for (Op op_b : kOps) run_case<T>({47, 53, 804, op_a, op_b, 2}, cfg, splits);
  run_operator<T>(47, 53, 804);
}

TEMPLATE_TEST_CASE("regression 2: 32x32x32 is right with every thread-block shape compiled in", "[gemm]", float,
                   double, std::int32_t) {
  using T = TestType;
  const auto configs = detail::gemm_configs<T>();
  for (int cfg = -1; cfg < static_cast<int>(configs.size()); ++cfg) {
    INFO("config " << (cfg < 0 ? std::string("auto") : configs[cfg].name) << ", "
                   << (cfg < 0 ? 0 : configs[cfg].threads) << " threads");
    for (Op op_a : kOps)
      for (Op op_b : kOps)
        for (int s : {0, 2}) run_case<T>({32, 32, 32, op_a, op_b, s}, cfg, 1);
    run_case<T>({32, 32, 32, Op::none, Op::none, 1}, cfg, 2);  // split-K too
  }
  run_operator<T>(32, 32, 32);
}

TEMPLATE_TEST_CASE("regression 3: every dimension at tile-1, tile, tile+1 for every configuration", "[gemm]", float,
                   double, std::int32_t) {
  using T = TestType;
  const auto configs = detail::gemm_configs<T>();
  int rot = 0;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    const detail::GemmConfigInfo& c = configs[cfg];
    INFO("config " << c.name);
    const std::vector<Index> ks = {c.bk - 1, c.bk, c.bk + 1, c.bk * c.stages - 1, c.bk * c.stages + 1};
    for (Index m : {c.bm - 1, c.bm, c.bm + 1})
      for (Index n : {c.bn - 1, c.bn, c.bn + 1})
        for (Index k : ks) {
          const int r = rot++;
          run_case<T>({m, n, k, kOps[r % 2], kOps[(r / 2) % 2], r % 5}, cfg, 1);
        }
    // Skinny: one row or column through the tiled kernel (gemm itself takes GEMV there).
    for (Op op_a : kOps)
      for (Op op_b : kOps) {
        run_case<T>({1, c.bn + 1, 2 * c.bk + 3, op_a, op_b, 2}, cfg, 1);
        run_case<T>({c.bm + 1, 1, 2 * c.bk + 3, op_a, op_b, 3}, cfg, 1);
      }
    // k == 1 (one k tile, nearly all zero fill), and primes that cut every tile dimension.
    run_case<T>({c.bm + 1, c.bn - 1, 1, Op::none, Op::transpose, 1}, cfg, 1);
    run_case<T>({131, 97, 263, Op::transpose, Op::none, 4}, cfg, 1);
  }
}

// ---------------------------------------------------------------- more paths
TEMPLATE_TEST_CASE("split-K: forced slice counts, and the same result on every run", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  const auto configs = detail::gemm_configs<T>();
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg)
    for (int splits : {2, 3, 7, 64})
      run_case<T>({65, 67, 803, kOps[splits % 2], kOps[(splits / 2) % 2], splits % 5}, cfg, splits);
  run_case<T>({64, 64, 8192, Op::none, Op::none, 1});  // the model splits this
  run_case<T>({3, 700, 2000, Op::transpose, Op::none, 2});

  // Deterministic: slices are summed in a fixed order.
  const HostMatrix<T> ha = random_matrix<T>(96, 3000, lo<T>(), hi<T>()), hb = random_matrix<T>(3000, 80, lo<T>(), hi<T>());
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  DeviceMatrix<T> c1, c2;
  detail::gemm_forced(0, 8, T(1), A, B, T(0), c1);
  detail::gemm_forced(0, 8, T(1), A, B, T(0), c2);
  CHECK(to_eigen(c1) == to_eigen(c2));
}

TEMPLATE_TEST_CASE("GEMV: m == 1 and n == 1 with every op, aligned and not", "[gemm]", float, double, std::int32_t) {
  using T = TestType;
  int rot = 0;
  for (Index len : {1, 3, 128, 1000, 4096, 4097})  // 4096, 4097: one pass of 1024-thread blocks
    for (Index k : {1, 5, 803, 4096})
      for (Op op_a : kOps)
        for (Op op_b : kOps) {
          run_case<T>({1, len, k, op_a, op_b, rot++ % 5});
          run_case<T>({len, 1, k, op_a, op_b, rot++ % 5});
        }
  run_case<T>({1, 1, 100000, Op::none, Op::none, 2});  // one dot product split over many blocks
  run_operator<T>(1, 777, 513);
  run_operator<T>(513, 1, 777);
}

TEMPLATE_TEST_CASE("GEMV along rows: every kernel variant (k slices, one pass)", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  struct Restore {
    ~Restore() { detail::gemv_cols_force(detail::GemvCols::automatic); }
  } restore;
  int rot = 0;
  for (auto how : {detail::GemvCols::split, detail::GemvCols::narrow}) {
    detail::gemv_cols_force(how);
    for (Index len : {1, 5, 999, 1000, 4096, 4097})
      for (Index k : {1, 7, 9, 803, 4096}) {
        INFO("variant " << static_cast<int>(how));
        run_case<T>({1, len, k, Op::none, Op::none, rot++ % 5});       // y = x B
        run_case<T>({len, 1, k, Op::transpose, Op::none, rot++ % 5});  // y = A^T x
      }
  }
}

TEMPLATE_TEST_CASE("unaligned rows: ld breaking 16-byte alignment takes the scalar path", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  for (Op op_a : kOps)
    for (Op op_b : kOps) {
      run_case<T>({130, 131, 803, op_a, op_b, 2});   // K odd: rows of A (or of B^T) unaligned
      run_case<T>({257, 803, 129, op_a, op_b, 3});   // N odd: rows of B and of C unaligned
      run_case<T>({803, 129, 257, op_a, op_b, 1});   // M odd: rows of A^T unaligned
    }
}

TEMPLATE_TEST_CASE("large products with unaligned rows run on padded copies", "[gemm][large]", float, double) {
  using T = TestType;
  // m*n*k >= 2^30 takes the padded path; each of K, N, M odd in turn, and all of them.
  const Case cases[] = {{1025, 1024, 1031, Op::none, Op::none, 2},     {1024, 1027, 1028, Op::none, Op::none, 3},
                        {1029, 1031, 1033, Op::none, Op::none, 1},     {1029, 1031, 1033, Op::transpose, Op::none, 2},
                        {1029, 1031, 1033, Op::none, Op::transpose, 3}, {1029, 1031, 1033, Op::transpose, Op::transpose, 0}};
  for (const Case& c : cases) run_case<T>(c);
  // The same with one k slice forced on each configuration (C padded too).
  for (int cfg = 0; cfg < static_cast<int>(detail::gemm_configs<T>().size()); ++cfg)
    run_case<T>({1029, 1031, 1033, Op::none, Op::none, 2}, cfg, 1);
}

TEMPLATE_TEST_CASE("200+ random awkward shapes, all op combinations, alpha and beta", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  constexpr double kMaxFma = 6e7;  // per product, so that the Eigen reference stays fast
  const int shapes = under_sanitizer() ? 30 : 220;
  for (int i = 0; i < shapes; ++i) {
    Index m = awkward_dim(), n = awkward_dim(), k = awkward_dim();
    while (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > kMaxFma) {
      Index& big = m >= n && m >= k ? m : (n >= k ? n : k);
      big = std::uniform_int_distribution<Index>(1, big / 2)(rng());
    }
    if (i % 7 == 0) {
      run_operator<T>(m, n, k);
    } else {
      std::uniform_int_distribution<int> d(0, 99);
      run_case<T>({m, n, k, kOps[d(rng()) % 2], kOps[d(rng()) % 2], d(rng()) % 5});
    }
  }
}

TEST_CASE("pipelined DMMA tiles: many k tiles, every layout, unaligned rows, split-K, IEEE specials", "[gemm]") {
  // The software-pipelined double kernel (kernels/gemm_dmma.cuh) reads fragments of the next
  // k-step and the next tile's first k-step before the barrier; these shapes run it through
  // many tiles with ragged ends in m, n and k, slices that end mid-tile, and operands whose
  // rows break 16-byte alignment (gemm then hands it padded copies, at any size).
  const auto configs = detail::gemm_configs<double>();
  int tested = 0, rot = 0;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    const detail::GemmConfigInfo& c = configs[cfg];
    if (c.name.rfind("pipe-", 0) != 0) continue;
    ++tested;
    INFO("config " << c.name);
    const Index deep = static_cast<Index>(c.bk) * (3 * c.stages + 2) + 5;  // past the ring 3 times, ragged
    for (Op op_a : kOps)
      for (Op op_b : kOps) {
        const int r = rot++;
        run_case<double>({2 * c.bm + 1, 3 * c.bn - 1, deep, op_a, op_b, r % 5}, cfg, 1);
        run_case<double>({c.bm - 1, c.bn + 1, 7, op_a, op_b, (r + 1) % 5}, cfg, 1);           // k < one k-step
        run_case<double>({c.bm + 3, 2 * c.bn + 5, 20 * c.bk + 7, op_a, op_b, (r + 2) % 5}, cfg, 3);  // split-K
        run_case<double>({131, 97, 803, op_a, op_b, (r + 3) % 5}, cfg, 1);  // odd k, n, m: unaligned rows
        run_case<double>({1, 1, 1, op_a, op_b, (r + 4) % 5}, cfg, 1);
      }
    run_case<double>({17, 19, 2 * c.bk, Op::none, Op::none, 0}, cfg, 2);  // one tile per slice
  }
  CHECK(tested > 0);

  // Infinities and NaNs follow IEEE as on the CUDA cores: an infinity in A makes its row of the
  // result infinite or NaN, the other rows stay exact.
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    if (configs[cfg].name.rfind("pipe-", 0) != 0) continue;
    INFO("config " << configs[cfg].name);
    HostMatrix<double> ha = random_matrix<double>(70, 90, 0.5, 1.0), hb = random_matrix<double>(90, 50, 0.5, 1.0);
    ha(3, 4) = std::numeric_limits<double>::infinity();
    ha(5, 6) = std::numeric_limits<double>::quiet_NaN();
    DeviceMatrix<double> C = DeviceMatrix<double>::constant(70, 50, 0.0);
    detail::gemm_forced(cfg, 1, 1.0, to_device(ha), to_device(hb), 0.0, C);
    const HostMatrix<double> got = to_eigen(C);
    for (Index j = 0; j < 50; ++j) {
      CHECK(got(3, j) == std::numeric_limits<double>::infinity());  // B > 0
      CHECK(std::isnan(got(5, j)));
      CHECK(std::isfinite(got(4, j)));
    }
  }
}

TEST_CASE("double: cluster-summed DMMA tiles against FP64 and bit for bit against the workspace path", "[gemm][cluster]") {
  // A "pipe-...-cl" tile adds its k slices in a thread-block cluster in slice order, as
  // gemm_finalize_kernel adds its base tile's partial sums: equal bits with alpha 1, beta 0.
  // With one slice and a last round of tiles that leaves most SMs idle, the tail split runs
  // those tiles (a second launch, tile_offset) in cluster-summed slices.
  int major = 0, sms = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  const auto configs = detail::gemm_configs<double>();
  int tested = 0, rot = 0;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    const detail::GemmConfigInfo& c = configs[cfg];
    if (c.cluster_splits == 0) continue;
    ++tested;
    INFO("config " << c.name);
    if (major < 9) {
      CHECK_THROWS_AS(run_case<double>({c.bm, c.bn, c.bk}, cfg, 2), std::invalid_argument);
      continue;
    }
    const int base = config_index(configs, c.name.substr(0, c.name.size() - 3));
    REQUIRE(base >= 0);
    CHECK(c.tail_split);
    const Index bm = c.bm, bn = c.bn, bk = c.bk;
    // Tail: 11 tile columns and sms / 11 + 1 tile rows leave 1 to 11 tiles past whole rounds.
    const Index tail_m = (sms / 11 + 1) * bm - 5, tail_n = 11 * bn - 3;
    struct Dims {
      Index m, n, k;
      int splits;
    };
    for (const Dims d : {Dims{bm - 1, bn + 1, 8 * bk * c.stages + 5, 2}, Dims{bm, bn, 804, 3}, Dims{1, 2 * bn + 3, 513, 8},
                         Dims{2 * bm + 1, 1, 300, 5}, Dims{3 * bm + 7, 2 * bn + 5, 97, 2}, Dims{17, 33, bk - 1, 2},
                         Dims{1000, 1000, 1000, 2}, Dims{1024, 1024, 1024, 13}, Dims{tail_m, tail_n, 1029, 1},
                         Dims{tail_m, tail_n, 2 * bk + 1, 1}}) {
      const Op op_a = kOps[rot % 2], op_b = kOps[(rot / 2) % 2];
      const int sc = rot++ % 5;
      INFO("m=" << d.m << " n=" << d.n << " k=" << d.k << " splits=" << d.splits);
      run_case<double>({d.m, d.n, d.k, op_a, op_b, sc}, cfg, d.splits);
      if (d.splits == 1) continue;  // the tail's slices have no workspace twin of one launch
      const HostMatrix<double> ha = random_matrix<double>(d.m, d.k), hb = random_matrix<double>(d.k, d.n);
      const auto A = to_device(ha);
      const auto B = to_device(hb);
      auto run = [&](int config, int s) {
        auto C = DeviceMatrix<double>::constant(d.m, d.n, poison_value<double>());
        detail::gemm_forced(config, s, 1.0, A, B, 0.0, C);
        return HostMatrix<double>(to_eigen(C));
      };
      const HostMatrix<double> got = run(cfg, d.splits), want = run(base, std::min(d.splits, c.cluster_splits));
      CHECK((got.array() == want.array()).all());
    }
  }
  CHECK(tested == 2);
}

// ---------------------------------------------------------------- API semantics
TEMPLATE_TEST_CASE("aliasing: A = A*B, B = A*B, gemm(A, A, A), C aliasing B", "[gemm]", float, double,
                   std::int32_t) {
  using T = TestType;
  for (Index n : {1, 33, 130}) {
    INFO("n = " << n);
    const Index m = n + 7;
    const HostMatrix<T> ha = random_matrix<T>(m, n, lo<T>(), hi<T>());   // m x n
    const HostMatrix<T> hs = random_matrix<T>(n, n, lo<T>(), hi<T>());   // square
    const HostMatrix<T> hq = random_matrix<T>(m, m, lo<T>(), hi<T>());   // square
    {  // A = A * B
      auto A = to_device(ha);
      const auto B = to_device(hs);
      A = A * B;
      check_product(to_eigen(A), op_of(ha, Op::none), op_of(hs, Op::none), 1, 0, Ref());
    }
    {  // B = A * B
      const auto A = to_device(hq);
      auto B = to_device(ha);
      B = A * B;
      check_product(to_eigen(B), op_of(hq, Op::none), op_of(ha, Op::none), 1, 0, Ref());
    }
    {  // A = alpha A A + beta A, and with A^T A
      const auto [alpha, beta] = scalars<T>(2);
      auto S = to_device(hs);
      gemm(alpha, S, S, beta, S);
      check_product(to_eigen(S), op_of(hs, Op::none), op_of(hs, Op::none), alpha, beta, hs.template cast<double>());
      auto S2 = to_device(hs);
      gemm(alpha, S2, S2, beta, S2, Op::transpose, Op::none);
      check_product(to_eigen(S2), op_of(hs, Op::transpose), op_of(hs, Op::none), alpha, beta,
                    hs.template cast<double>());
      auto S3 = to_device(hs);
      gemm(alpha, S3, S3, T(0), S3, Op::none, Op::transpose);
      check_product(to_eigen(S3), op_of(hs, Op::none), op_of(hs, Op::transpose), alpha, 0, Ref());
    }
    {  // C aliasing B: B = A^T B + B (A square)
      const auto [alpha, beta] = scalars<T>(1);
      const auto A = to_device(hq);
      auto B = to_device(ha);
      gemm(alpha, A, B, beta, B, Op::transpose);
      check_product(to_eigen(B), op_of(hq, Op::transpose), op_of(ha, Op::none), alpha, beta,
                    ha.template cast<double>());
    }
  }
}

TEMPLATE_TEST_CASE("C += A*B, alpha == 0, k == 0, empty results", "[gemm]", float, double, std::int32_t) {
  using T = TestType;
  const HostMatrix<T> ha = random_matrix<T>(70, 90, lo<T>(), hi<T>()), hb = random_matrix<T>(90, 50, lo<T>(), hi<T>());
  const HostMatrix<T> hc = random_matrix<T>(70, 50, lo<T>(), hi<T>());
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  {
    auto C = to_device(hc);
    gemm(T(1), A, B, T(1), C);  // C += A*B
    check_product(to_eigen(C), op_of(ha, Op::none), op_of(hb, Op::none), 1, 1, hc.template cast<double>());
  }
  {  // alpha == 0: C = beta C, and A and B are not read (a NaN in A does not leak)
    HostMatrix<T> hn = ha;
    if constexpr (!kIsInt<T>) hn(3, 4) = std::numeric_limits<T>::quiet_NaN();
    const auto N = to_device(hn);
    auto C = to_device(hc);
    gemm(T(0), N, B, T(3), C);
    CHECK(to_eigen(C) == HostMatrix<T>(T(3) * hc));
  }
  for (int beta : {0, 2}) {  // k == 0: C = beta C (zeros over the poison when beta == 0)
    INFO("k == 0, beta = " << beta);
    const DeviceMatrix<T> A0(70, 0), B0(0, 50);
    DeviceMatrix<T> C = beta ? to_device(hc) : DeviceMatrix<T>::constant(70, 50, poison_value<T>());
    gemm(T(1), A0, B0, T(beta), C);
    CHECK(to_eigen(C) == HostMatrix<T>(T(beta) * hc));
    poison_next<T>(70, 50, A0.stream());
    CHECK(to_eigen(A0 * B0) == HostMatrix<T>::Zero(70, 50));
  }
  {  // m == 0 or n == 0
    const DeviceMatrix<T> E(0, 90);
    const DeviceMatrix<T> R = E * B;
    CHECK(R.rows() == 0);
    CHECK(R.cols() == 50);
    const DeviceMatrix<T> R2 = A * DeviceMatrix<T>(90, 0);
    CHECK(R2.rows() == 70);
    CHECK(R2.cols() == 0);
  }
  {  // an empty C is resized; its values (none) count as zero
    DeviceMatrix<T> C;
    gemm(T(2), A, B, T(5), C);
    check_product(to_eigen(C), op_of(ha, Op::none), op_of(hb, Op::none), 2, 0, Ref());
  }
}

TEMPLATE_TEST_CASE("shape errors are thrown before anything runs", "[gemm]", float, double, std::int32_t) {
  using T = TestType;
  const HostMatrix<T> hc = random_matrix<T>(4, 6, lo<T>(), hi<T>());
  const auto A = to_device(random_matrix<T>(4, 5, lo<T>(), hi<T>()));
  const auto B = to_device(random_matrix<T>(6, 6, lo<T>(), hi<T>()));
  auto C = to_device(hc);
  CHECK_THROWS_AS(A * B, shape_error);
  CHECK_THROWS_AS(gemm(T(1), A, B, T(0), C), shape_error);                            // inner 5 vs 6
  CHECK_THROWS_AS(gemm(T(1), A, B, T(0), C, Op::transpose, Op::none), shape_error);   // 5x4 * 6x6
  CHECK_THROWS_AS(gemm(T(1), B, B, T(0), C), shape_error);                            // C is 4x6, not 6x6
  CHECK(to_eigen(C) == hc);  // untouched
  try {
    (void)(A * B);
  } catch (const shape_error& e) {
    const std::string what = e.what();
    CHECK(what.find("operator*") != std::string::npos);
    CHECK(what.find("4x5") != std::string::npos);
    CHECK(what.find("6x6") != std::string::npos);
  }
  DeviceMatrix<T> empty;
  CHECK_THROWS_AS(detail::gemm_forced(99, 0, T(1), B, B, T(0), empty), std::invalid_argument);
  CHECK(empty.empty());
}

TEST_CASE("float products keep every fp32 bit (no TF32 shortcut)") {
  // (1 + 2^-15) has 16 significant bits: TF32 (10) would round it to 1; fp32 sums of 64 of
  // them are exact.
  const float v = 1.0f + std::ldexp(1.0f, -15);
  const auto configs = detail::gemm_configs<float>();
  for (int cfg = -1; cfg < static_cast<int>(configs.size()); ++cfg) {
    INFO("config " << cfg);
    const auto A = DeviceMatrix<float>::constant(40, 64, v);
    const auto B = DeviceMatrix<float>::constant(64, 33, 1.0f);
    DeviceMatrix<float> C;
    detail::gemm_forced(cfg, 1, 1.0f, A, B, 0.0f, C);
    CHECK((to_eigen(C).array() == 64.0f * v).all());
  }
}

namespace {
/// Restores the process-wide float math setting at the end of a scope.
struct FloatMathScope {
  FloatMath saved = float_math();
  explicit FloatMathScope(FloatMath mode) { set_float_math(mode); }
  ~FloatMathScope() { set_float_math(saved); }
};

/// ||C - C_ref||_F / ||C_ref||_F of the float product computed with configuration `config`.
double relative_error(const HostMatrix<float>& ha, const HostMatrix<float>& hb, const Ref& ref, int config) {
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  auto C = DeviceMatrix<float>::constant(ha.rows(), hb.cols(), poison_value<float>());
  detail::gemm_forced(config, 0, 1.0f, A, B, 0.0f, C);
  return (to_eigen(C).cast<double>() - ref).norm() / ref.norm();
}

bool is_tf32(const detail::GemmConfigInfo& c) { return c.math == detail::GemmMath::tf32x3; }
bool is_wgmma(const detail::GemmConfigInfo& c) { return c.name.rfind("wgmma-", 0) == 0; }
}  // namespace

TEST_CASE("float: the 3xTF32 tensor-core kernels are as accurate as FP32 on the CUDA cores") {
  // Signed data, and positive data (images), where rounding errors do not cancel; k up to 16384.
  const auto configs = detail::gemm_configs<float>();
  struct Shape {
    Index m, n, k;
  };
  const bool quick = under_sanitizer();
  for (const Shape s : {Shape{200, 300, 250}, Shape{130, 129, 4096}, Shape{64, 70, 16384}})
    for (const double low : {-1.0, 0.0}) {
      if (quick && s.k > 4096) continue;
      const HostMatrix<float> ha = random_matrix<float>(s.m, s.k, low, 1.0), hb = random_matrix<float>(s.k, s.n, low, 1.0);
      const Ref ref = ha.cast<double>() * hb.cast<double>();
      const double e_simt = relative_error(ha, hb, ref, 0);  // 128x128x8 on the CUDA cores
      REQUIRE(!is_tf32(configs[0]));
      for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
        if (!is_tf32(configs[cfg])) continue;
        const double e = relative_error(ha, hb, ref, cfg);
        std::printf("accuracy %ldx%ldx%ld data [%g, 1): %-18s %.3g  (simt %.3g)\n", long(s.m), long(s.n), long(s.k),
                    low, configs[cfg].name.c_str(), e, e_simt);
        INFO(configs[cfg].name << " k=" << s.k << " low=" << low << ": " << e << " against simt " << e_simt);
        CHECK(e <= 4 * e_simt + 1e-7);
      }
    }
}

TEST_CASE("float: 3xTF32 configurations with the same split give the same results, bit for bit") {
  // The row loop, ldmatrix and the tile shape change neither the MMAs of an output element nor
  // their order (k-steps of 8, two per step sum, k tiles of 32), so with one k slice every such
  // configuration must equal tf32x3-128x64x32 (the whole-tile loop). The fast split
  // ("tf32x3f...") rounds small differently: those must equal the first of them (and the
  // accuracy test bounds their error).
  const auto configs = detail::gemm_configs<float>();
  const auto is_fast = [&](int cfg) { return configs[cfg].name.rfind("tf32x3f", 0) == 0; };
  int base = -1, base_fast = -1;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    if (configs[cfg].name == "tf32x3-128x64x32") base = cfg;
    if (base_fast < 0 && is_fast(cfg)) base_fast = cfg;
  }
  REQUIRE(base >= 0);
  struct Dims {
    Index m, n, k;
  };
  int rot = 0;
  for (const Dims d : {Dims{128, 128, 32}, Dims{129, 127, 33}, Dims{1, 257, 95}, Dims{255, 1, 97}, Dims{67, 263, 1000},
                       Dims{300, 70, 31}})
    for (Op op_a : kOps)
      for (Op op_b : kOps) {
        const HostMatrix<float> ha = stored<float>(d.m, d.k, op_a), hb = stored<float>(d.k, d.n, op_b);
        const auto A = to_device(ha);
        const auto B = to_device(hb);
        const float beta = rot++ % 2 ? 0.5f : 0.0f;
        const HostMatrix<float> hc = random_matrix<float>(d.m, d.n, -1.0, 1.0);
        auto run = [&](int cfg) {
          DeviceMatrix<float> C =
              beta == 0.0f ? DeviceMatrix<float>::constant(d.m, d.n, poison_value<float>()) : to_device(hc);
          detail::gemm_forced(cfg, 1, 1.25f, A, B, beta, C, op_a, op_b);
          return HostMatrix<float>(to_eigen(C));
        };
        const HostMatrix<float> want = run(base);
        check_product<float>(want, op_of(ha, op_a), op_of(hb, op_b), 1.25, beta, hc.cast<double>());
        HostMatrix<float> want_fast;
        if (base_fast >= 0) {
          want_fast = run(base_fast);
          check_product<float>(want_fast, op_of(ha, op_a), op_of(hb, op_b), 1.25, beta, hc.cast<double>());
        }
        for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
          // The wgmma tile adds a k-step's 8 products inside a different instruction, whose
          // order of additions need not be mma.sync's: the accuracy test and its own test
          // below check it.
          if (!is_tf32(configs[cfg]) || configs[cfg].bk % 16 != 0 || is_wgmma(configs[cfg])) continue;
          INFO(configs[cfg].name << " m=" << d.m << " n=" << d.n << " k=" << d.k << " op_a=" << op_name(op_a)
                                 << " op_b=" << op_name(op_b) << " beta=" << beta);
          const HostMatrix<float> got = run(cfg);
          CHECK((got.array() == (is_fast(cfg) ? want_fast : want).array()).all());
        }
      }
}

TEST_CASE("float: cluster split-K tiles equal the workspace path bit for bit, at every edge", "[gemm]") {
  // A "-cl" tile (wgmma) adds its k slices inside the kernel (a thread-block cluster, distributed
  // shared memory) in slice order, as gemm_finalize_kernel adds the base tile's partial sums:
  // with alpha 1 and beta 0 the results must be equal bit for bit for every slice count up to
  // a cluster's 8, and right against FP64 with any alpha, beta and layout. Tile edges, k of a
  // few tiles or under one, single rows and columns, odd n (scalar stores), and counts past 8
  // (clamped).
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  const auto configs = detail::gemm_configs<float>();
  int tested = 0;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    const detail::GemmConfigInfo& c = configs[cfg];
    const std::string suffix = "-cl";
    if (c.name.size() <= suffix.size() || c.name.compare(c.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    // Thread-block clusters need sm_90, the wgmma tiles sm_90a code (9.0 only): forcing the
    // tile elsewhere says so before it runs.
    if (major < 9 || (c.only_arch != 0 && c.only_arch != major * 10 + minor)) {
      CHECK_THROWS_AS(run_case<float>({c.bm, c.bn, c.bk}, cfg, 2), std::invalid_argument);
      ++tested;
      continue;
    }
    const std::string base_name = c.name.substr(0, c.name.size() - suffix.size());
    const int base = config_index(configs, base_name);
    INFO("config " << c.name << " (base " << base_name << ")");
    REQUIRE(base >= 0);
    CHECK(c.cluster_splits == 8);
    CHECK(c.bm == configs[base].bm);
    CHECK(c.bn == configs[base].bn);
    CHECK(c.bk == configs[base].bk);
    ++tested;
    struct Dims {
      Index m, n, k;
    };
    const Index bm = c.bm, bn = c.bn, bk = c.bk;
    int rot = 0;
    for (const Dims d : {Dims{bm - 1, bn + 1, 8 * bk * c.stages + 5}, Dims{bm, bn, 804}, Dims{bm + 1, bn - 1, 777},
                         Dims{47, 53, 804}, Dims{1, 2 * bn + 3, 513}, Dims{2 * bm + 1, 1, 300}, Dims{3 * bm + 7, 2 * bn + 5, 97},
                         Dims{17, 33, bk - 1}, Dims{bm, bn, 2 * bk + 1}})
      for (int splits : {1, 2, 3, 5, 8, 13}) {
        if (under_sanitizer() && splits != 3 && splits != 8) continue;  // instrumented: fewer counts
        const Op op_a = kOps[rot % 2], op_b = kOps[(rot / 2) % 2];
        const int sc = rot++ % 5;
        INFO("m=" << d.m << " n=" << d.n << " k=" << d.k << " splits=" << splits << " op_a=" << op_name(op_a)
                  << " op_b=" << op_name(op_b));
        const HostMatrix<float> ha = stored<float>(d.m, d.k, op_a), hb = stored<float>(d.k, d.n, op_b);
        const auto A = to_device(ha);
        const auto B = to_device(hb);
        auto run = [&](int config, int s) {
          auto C = DeviceMatrix<float>::constant(d.m, d.n, poison_value<float>());
          detail::gemm_forced(config, s, 1.0f, A, B, 0.0f, C, op_a, op_b);
          return HostMatrix<float>(to_eigen(C));
        };
        const HostMatrix<float> got = run(cfg, splits);
        check_product<float>(got, op_of(ha, op_a), op_of(hb, op_b), 1.0, 0.0, Ref());
        // The base tile with the count the cluster tile runs (at most 8 slices).
        const HostMatrix<float> want = run(base, std::min(splits, 8));
        CHECK((got.array() == want.array()).all());
        // alpha, beta and the layout: against FP64 (C read, scaled and added in the kernel).
        run_case<float>({d.m, d.n, d.k, op_a, op_b, sc}, cfg, splits);
      }
  }
  CHECK(tested == 2);  // wgmma-128x128x32, wgmma-64x128x32
  if (major < 9) return;
  // The same sums on every run (no atomics, a fixed order), and gemm's own path beside them.
  const HostMatrix<float> ha = random_matrix<float>(47, 804), hb = random_matrix<float>(804, 53);
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    if (configs[cfg].cluster_splits == 0) continue;
    if (configs[cfg].only_arch != 0 && configs[cfg].only_arch != major * 10 + minor) continue;
    DeviceMatrix<float> c1, c2;
    detail::gemm_forced(cfg, 0, 1.0f, A, B, 0.0f, c1);
    detail::gemm_forced(cfg, 0, 1.0f, A, B, 0.0f, c2);
    CHECK(to_eigen(c1) == to_eigen(c2));
  }
  run_case<float>({47, 53, 804, Op::none, Op::none, 2});
  run_case<float>({777, 777, 777, Op::none, Op::transpose, 3});
}

TEST_CASE("float: infinities and NaNs come out as IEEE arithmetic gives them, on every configuration") {
  // inf * 1 must stay inf: with 3xTF32 the remainder of an infinity is NaN and inf * 0 = NaN,
  // so such tiles must take the exact path.
  const Index m = 70, n = 90, k = 100;
  const auto configs = detail::gemm_configs<float>();
  HostMatrix<float> ha = random_matrix<float>(m, k), hb = random_matrix<float>(k, n);
  hb.row(5).setConstant(1.0f);                               // exactly representable in TF32
  ha(3, 5) = std::numeric_limits<float>::infinity();         // row 3: +inf everywhere
  ha(10, 7) = -std::numeric_limits<float>::infinity();       // row 10: +-inf by the sign of B(7, j)
  hb(9, 2) = std::numeric_limits<float>::quiet_NaN();         // column 2: NaN everywhere
  ha(40, 20) = std::numeric_limits<float>::infinity();        // row 40: +inf - inf = NaN
  ha(40, 21) = -std::numeric_limits<float>::infinity();
  hb.row(20).setConstant(2.0f);
  hb.row(21).setConstant(0.5f);
  // NaNs whose bits overflow when half a TF32 ulp is added to them (the GPU's own NaN is
  // 0x7fffffff): the integer rounding of a split would make them finite.
  const auto nan_bits = [](std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  ha(50, 30) = nan_bits(0x7fffffffu);  // row 50: NaN everywhere
  hb(31, 60) = nan_bits(0xffffffffu);  // column 60: NaN everywhere
  ha(55, 32) = nan_bits(0x7ffff000u);  // row 55: NaN everywhere
  const Ref ref = ha.cast<double>() * hb.cast<double>();
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  for (int cfg = -1; cfg < static_cast<int>(configs.size()); ++cfg)
    for (int splits : {1, 3}) {
      INFO("config " << cfg << " splits " << splits);
      auto C = DeviceMatrix<float>::constant(m, n, 7.0f);
      detail::gemm_forced(cfg, splits, 1.0f, A, B, 0.0f, C);
      const HostMatrix<float> got = to_eigen(C);
      Index wrong = 0;
      for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) {
          const double g = got(i, j), r = ref(i, j);
          const bool ok = std::isnan(r) ? std::isnan(g) : std::isinf(r) ? g == r : std::abs(g - r) <= 1e-3;
          wrong += !ok;
        }
      CHECK(wrong == 0);
    }
}

TEST_CASE("float: the wgmma tile against FP64: many k tiles, every layout, edges, split-K, aligned or not", "[gemm]") {
  // The Hopper tile (kernels/gemm_wgmma.cuh): a TMA ring of 3 raw stages, two split buffers
  // and the mbarrier phases, run through many k tiles with ragged ends in m, n and k; k
  // slices; operands whose rows break 16-byte alignment (gemm hands it padded copies); and
  // products whose k stops inside the first k-step. The error bound is check_product's.
  const auto configs = detail::gemm_configs<float>();
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  int tested = 0, rot = 0;
  for (int cfg = 0; cfg < static_cast<int>(configs.size()); ++cfg) {
    const detail::GemmConfigInfo& c = configs[cfg];
    if (!is_wgmma(c)) continue;
    INFO("config " << c.name);
    if (major * 10 + minor != 90) {  // sm_90a code runs on compute capability 9.0 only
      CHECK_THROWS_AS(run_case<float>({c.bm, c.bn, c.bk}, cfg, 1), std::invalid_argument);
      continue;
    }
    ++tested;
    const Index deep = static_cast<Index>(c.bk) * (3 * c.stages + 2) + 5;  // past the ring 3 times, ragged
    for (Op op_a : kOps)
      for (Op op_b : kOps) {
        const int r = rot++;
        run_case<float>({2 * c.bm + 1, 3 * c.bn - 1, deep, op_a, op_b, r % 5}, cfg, 1);
        run_case<float>({c.bm - 1, c.bn + 1, 7, op_a, op_b, (r + 1) % 5}, cfg, 1);  // k < one k-step
        run_case<float>({c.bm + 3, 2 * c.bn + 5, 20 * c.bk + 7, op_a, op_b, (r + 2) % 5}, cfg, 3);  // split-K
        run_case<float>({131, 97, 803, op_a, op_b, (r + 3) % 5}, cfg, 1);  // odd k, n, m: unaligned rows
        run_case<float>({1, 1, 1, op_a, op_b, (r + 4) % 5}, cfg, 1);
        run_case<float>({509, 257, 1021, op_a, op_b, r % 5}, cfg, 0);  // primes, the model's slices
      }
    run_case<float>({17, 19, 2 * c.bk, Op::none, Op::none, 0}, cfg, 2);  // one k tile per slice
    // Tile edges in m and n (1, tile-1, tile, tile+1, a prime) with k inside the first k-step
    // (1, 4), one past a k tile (33) and a ragged ring (3 tiles + 1): TMA's zero fill is all
    // that pads them. Layouts and scalars rotate.
    for (Index m : {Index(1), Index(c.bm) - 1, Index(c.bm), Index(c.bm) + 1, Index(131)})
      for (Index n : {Index(1), Index(c.bn) - 1, Index(c.bn), Index(c.bn) + 1, Index(131)})
        for (Index k : {Index(1), Index(4), Index(c.bk) + 1, Index(c.bk) * c.stages + 1}) {
          const int r = rot++;
          run_case<float>({m, n, k, kOps[r % 2], kOps[(r / 2) % 2], r % 5}, cfg, 1);
        }
    // A long k with a small output: the model's slices (64 at most) of 100003 (ragged, odd).
    for (Op op_a : kOps) run_case<float>({37, 41, 100003, op_a, Op::none, 1}, cfg, 0);
    run_case<float>({129, 127, 100003, Op::none, Op::transpose, 2}, cfg, 5);
    // A long k against FP64, signed and positive data: within 4x the CUDA-core kernel's error
    // (the accuracy test above does the same on its shapes).
    for (const double low : {-1.0, 0.0}) {
      const HostMatrix<float> ha = random_matrix<float>(257, 8192, low, 1.0), hb = random_matrix<float>(8192, 129, low, 1.0);
      const Ref ref = ha.cast<double>() * hb.cast<double>();
      const double e = relative_error(ha, hb, ref, cfg), e_simt = relative_error(ha, hb, ref, 0);
      std::printf("accuracy 257x129x8192 data [%g, 1): %-18s %.3g  (simt %.3g)\n", low, c.name.c_str(), e, e_simt);
      CHECK(e <= 4 * e_simt + 1e-7);
    }
  }
  if (major * 10 + minor == 90) CHECK(tested > 0);
}

namespace {
/// gemm on views: A (m x k) and B (k x n) windows at column 1 of host matrices one column
/// wider, so that their rows start 4 bytes past a 16-byte boundary and their row stride is odd
/// when `odd_ld` (else a multiple of 4 floats, from an aligned start); C a window too. The
/// automatic path: an operand whose rows break 16-byte alignment gets a padded copy or a
/// configuration that reads it as it is, whichever the model prefers. Returns gemm's plan for
/// the shape.
std::string run_view_case(Index m, Index n, Index k, bool odd_ld, int scalars_index) {
  const auto [alpha, beta] = scalars<float>(scalars_index);
  const Index pad_a = odd_ld ? (k % 2 == 0 ? 1 : 2) : 4 - k % 4 + 4, pad_b = odd_ld ? (n % 2 == 0 ? 1 : 2) : 4 - n % 4 + 4;
  const Index a0 = odd_ld ? 1 : 0, b0 = odd_ld ? 1 : 0;
  const HostMatrix<float> ha = random_matrix<float>(m, k + pad_a), hb = random_matrix<float>(k, n + pad_b);
  HostMatrix<float> hc = random_matrix<float>(m + 2, n + 3);
  if (beta == 0.0f) hc.block(1, 2, m, n).setConstant(poison_value<float>());  // C's window poisoned
  const auto A = to_device(ha);
  const auto B = to_device(hb);
  DeviceMatrix<float> C = to_device(hc);
  INFO("views m=" << m << " n=" << n << " k=" << k << " lda=" << k + pad_a << " ldb=" << n + pad_b << " a0=" << a0
                  << " scalars#" << scalars_index << " plan " << detail::gemm_plan<float>(m, n, k));
  gemm(alpha, A.block(0, a0, m, k), B.block(0, b0, k, n), beta, C.block(1, 2, m, n));
  const HostMatrix<float> got = to_eigen(C);
  const Ref c0 = hc.block(1, 2, m, n).cast<double>();
  check_product<float>(HostMatrix<float>(got.block(1, 2, m, n)), ha.block(0, a0, m, k).cast<double>(),
                       hb.block(0, b0, k, n).cast<double>(), alpha, beta, c0);
  HostMatrix<float> outside = got, want_outside = hc;
  outside.block(1, 2, m, n).setZero();
  want_outside.block(1, 2, m, n).setZero();
  CHECK((outside.array() == want_outside.array()).all());  // nothing outside C's window written
  return detail::gemm_plan<float>(m, n, k);
}
}  // namespace

TEST_CASE("float: gemm picks the wgmma tile on sm_90 where the model says so, and runs it right", "[gemm]") {
  // On compute capability 9.0 (the library's sm_90a code) large float products run on the
  // wgmma tile by default; elsewhere never (the mma.sync tiles run there). Which shapes it wins
  // is the benchmark's question; here: the automatic path reaches it, edges and all, and
  // operands whose rows break 16-byte alignment fall back or get padded copies, correctly.
  int major = 0, minor = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) == cudaSuccess);
  const bool hopper = major * 10 + minor == 90;
  const auto on_wgmma = [](const std::string& plan) { return plan.rfind("wgmma-", 0) == 0; };
  CHECK(on_wgmma(detail::gemm_plan<float>(4096, 4096, 4096)) == hopper);
  CHECK(on_wgmma(detail::gemm_plan<float>(8192, 8192, 8192)) == hopper);
  CHECK_FALSE(on_wgmma(detail::gemm_plan<double>(4096, 4096, 4096)));
  {
    const FloatMathScope scope(FloatMath::simt);
    CHECK_FALSE(on_wgmma(detail::gemm_plan<float>(4096, 4096, 4096)));
  }
  // Automatic products (every layout, alpha/beta, C poisoned) on shapes the model sends to the
  // 128x128 tiles: ragged in m, n and k, one slice or several.
  const bool quick = under_sanitizer();
  struct Dims {
    Index m, n, k;
  };
  int wgmma_runs = 0, rot = 0;
  // (1000^3 and 777^3 take wgmma-128x128x32-cl s=2 on the H200, 65536x64x64 the mma.sync
  // tf32x3r-128x64x32-2b: the cost model's picks since branch gemm7.)
  for (const Dims d : {Dims{1000, 1000, 1000}, Dims{1025, 769, 515}, Dims{2048, 1536, 64}, Dims{256, 384, 20000},
                       Dims{777, 777, 777}, Dims{65536, 64, 64}}) {
    if (quick && d.k > 1000) continue;
    const std::string plan = detail::gemm_plan<float>(d.m, d.n, d.k);
    std::printf("automatic %ldx%ldx%ld: %s\n", long(d.m), long(d.n), long(d.k), plan.c_str());
    wgmma_runs += on_wgmma(plan);
    run_float_layouts(d.m, d.n, d.k, rot, quick);
  }
  if (hopper) CHECK(wgmma_runs > 0);
  // Views: rows at 16-byte multiples (wgmma reads them in place), and odd strides from a
  // start 4 bytes off (padded copies for wgmma, or a tile that reads them as they are); a
  // product past kPadMinFma, where every tile gets padded copies.
  for (const bool odd : {false, true}) {
    const std::string plan = run_view_case(1000, 1000, 1000, odd, odd ? 2 : 1);
    std::printf("views 1000^3 %s: %s\n", odd ? "odd ld" : "aligned ld", plan.c_str());
    run_view_case(777, 131, 129, odd, 3);
    run_view_case(129, 127, 33, odd, 0);
    if (!quick) run_view_case(1031, 1029, 1033, odd, odd ? 3 : 2);
  }
}

TEST_CASE("float: narrow products (n <= 16 or m <= 16) take the narrow CUDA-core tiles, and run right", "[gemm]") {
  // The tall tiles where n fits them, the short ones where m does (which of them wins is the
  // benchmark's question): every layout, alpha and beta, C poisoned, ragged lengths, prime k,
  // and k long enough for the model to cut it into slices.
  struct Dims {
    Index m, n, k;
  };
  const auto narrow = [](const std::string& plan) {
    return plan.rfind("128x16x16 ", 0) == 0 || plan.rfind("16x128x16 ", 0) == 0;
  };
  const bool quick = under_sanitizer();
  int narrow_runs = 0, rot = 0;
  for (const Dims d : {Dims{4099, 16, 131}, Dims{16, 4099, 131}, Dims{20011, 3, 301}, Dims{5, 20011, 301},
                       Dims{1000, 13, 3001}, Dims{11, 1000, 3001}, Dims{2, 2, 50000}}) {
    const std::string plan = detail::gemm_plan<float>(d.m, d.n, d.k);
    std::printf("automatic %ldx%ldx%ld: %s\n", long(d.m), long(d.n), long(d.k), plan.c_str());
    narrow_runs += narrow(plan);
    run_float_layouts(d.m, d.n, d.k, rot, quick);
  }
  CHECK(narrow_runs >= 6);
  // Windows of padded hosts, at column 0 with ld a multiple of 4, or at column 1 with an odd ld
  // (rows off 16 bytes at every shift): there the narrow tiles copy the operand they stream as
  // the aligned chunks that cover its rows.
  int narrow_views = 0;
  for (const Dims d : {Dims{4099, 16, 131}, Dims{5, 20011, 301}, Dims{2003, 7, 64}})
    for (bool odd : {false, true}) {
      const std::string plan = run_view_case(d.m, d.n, d.k, odd, rot++ % 4);
      std::printf("views %ldx%ldx%ld %s: %s\n", long(d.m), long(d.n), long(d.k), odd ? "odd ld" : "aligned ld",
                  plan.c_str());
      narrow_views += narrow(plan);
    }
  CHECK(narrow_views >= 4);
}

TEST_CASE("set_float_math: simt keeps float products on the CUDA cores") {
  CHECK(float_math() == FloatMath::tf32x3);  // the default
  {
    const FloatMathScope scope(FloatMath::simt);
    CHECK(float_math() == FloatMath::simt);
    for (Index s : {64, 1000, 4096}) CHECK(detail::gemm_plan<float>(s, s, s).find("tf32") == std::string::npos);
    CHECK(detail::gemm_plan<float>(64, 8192, 8192).find("tf32") == std::string::npos);
  }
  CHECK(float_math() == FloatMath::tf32x3);
  // Which configuration wins is the cost model's business (test_gemm_model covers it on
  // synthetic devices); here only the rule: a large float product runs on the TF32 tensor
  // cores where they exist (sm_80 on), and double never does.
  int major = 0;
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  const std::string plan = detail::gemm_plan<float>(4096, 4096, 4096);
  CHECK((plan.rfind("tf32x3", 0) == 0 || plan.rfind("wgmma-", 0) == 0) == (major >= 8));
  CHECK(detail::gemm_plan<double>(4096, 4096, 4096).find("tf32") == std::string::npos);
}

TEST_CASE("operands on three streams: gemm orders itself after all of them") {
  const Stream sa = Stream::create(), sb = Stream::create(), sc = Stream::create();
  const HostMatrix<float> ha = random_matrix<float>(300, 200), hb = random_matrix<float>(200, 100);
  const HostMatrix<float> hc = random_matrix<float>(300, 100);
  for (int rep = 0; rep < 3; ++rep) {
    const auto A = to_device(ha, sa);
    const auto B = to_device(hb, sb);
    auto C = to_device(hc, sc);
    gemm(0.5f, A, B, -1.0f, C);
    CHECK(C.stream() == sc);
    check_product(to_eigen(C), op_of(ha, Op::none), op_of(hb, Op::none), 0.5, -1.0, hc.cast<double>());
    const auto P = A * B;
    CHECK(P.stream() == sa);
    check_product(to_eigen(P), op_of(ha, Op::none), op_of(hb, Op::none), 1, 0, Ref());
  }
}
