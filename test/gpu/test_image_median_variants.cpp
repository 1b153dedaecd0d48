// The forms of the median kernels (one output a thread per row; pairs of adjacent rows sharing
// their windows' common values; f32 5x5 2 x 2 blocks sharing a 4 x 4 core), forced through support/image_median.hpp, against the window's
// median with replicated borders (support/median_ref.hpp), exact: u8 3, 5, 7 and f32 3, 5 on odd
// shapes (1xN, Nx1, primes, one past the tiles, 4097x4095, past grid.y), few levels (ties), and
// regions of interest at odd offsets. The public median_blur is test_image_neigh's.
#include "support/image_median.hpp"
#include "support/median_ref.hpp"
#include "support/util.hpp"

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
template <class T>
using H = HostMatrix<T>;

template <class T>
H<T> median_ref(const H<T>& img, int k) {
  H<T> out(img.rows(), img.cols());
  for (Index y = 0; y < img.rows(); ++y)
    for (Index x = 0; x < img.cols(); ++x) out(y, x) = median_reference_at(img.data(), img.rows(), img.cols(), img.cols(), k, y, x);
  return out;
}

/// Each form on the view (r, c, h, w) of h_full (the whole of it where h or w is 0).
template <class T>
void check_forms(const H<T>& h_full, int k, std::array<Index, 4> v = {0, 0, 0, 0}) {
  if (v[2] == 0) v = {0, 0, h_full.rows(), h_full.cols()};
  CAPTURE(shape(h_full.rows(), h_full.cols()), v[0], v[1], v[2], v[3], k);
  const auto img = to_device(h_full);
  const H<T> want = median_ref(H<T>(h_full.block(v[0], v[1], v[2], v[3])), k);
  const int forms = std::is_same_v<T, float> && k == 5 ? 3 : 2;
  for (int form = 0; form < forms; ++form) {
    CAPTURE(form);
    poison_next<T>(v[2], v[3], img.stream());
    CHECK(to_eigen(median_forced(img.block(v[0], v[1], v[2], v[3]), k, form)) == want);
  }
  CHECK(to_eigen(img) == h_full);
}
}  // namespace

TEST_CASE("median kernels, single rows and row pairs, equal the reference exactly", "[image][median]") {
  for (auto [r, c] : awkward_shapes(4, 300)) {
    if (r * c > 40000) continue;
    for (int k : {3, 5, 7}) {
      check_forms(random_matrix<std::uint8_t>(r, c, 0, 255), k);
      check_forms(random_matrix<std::uint8_t>(r, c, 0, 2), k);  // ties
    }
    for (int k : {3, 5}) check_forms(random_matrix<float>(r, c, -100.0, 100.0), k);
  }
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 4097}, {4097, 1}, {2, 10007}, {33, 129}, {31, 127}}) {
    for (int k : {3, 5, 7}) check_forms(random_matrix<std::uint8_t>(r, c, 0, 255), k);
    for (int k : {3, 5}) check_forms(random_matrix<float>(r, c, 0.0, 1.0), k);
  }
  check_forms(random_matrix<std::uint8_t>(4097, 4095, 0, 255), 5);
  check_forms(random_matrix<float>(4097, 4095, 0.0, 1.0), 5);
  check_forms(random_matrix<float>(1031, 2053, 0.0, 1.0), 3);
  check_forms(random_matrix<std::uint8_t>(2100001, 3, 0, 255), 3);  // 65'626 tiles of 32 rows: past grid.y
}

TEST_CASE("median kernels, both forms, on regions of interest at odd offsets", "[image][median][views]") {
  const H<std::uint8_t> h8 = random_matrix<std::uint8_t>(301, 517, 0, 255);
  const H<float> hf = random_matrix<float>(301, 517, -1.0, 1.0);
  for (const auto& v : std::vector<std::array<Index, 4>>{{1, 3, 299, 510}, {100, 1, 67, 129}, {0, 516, 301, 1}, {300, 0, 1, 517},
                                                         {7, 9, 2, 3}}) {
    for (int k : {3, 5, 7}) check_forms(h8, k, v);
    for (int k : {3, 5}) check_forms(hf, k, v);
  }
}
