// Host test: the overlap test that decides when a write through a view needs a temporary
// (src/detail/view_overlap.hpp) against brute force over the elements, on windows of one
// matrix (exact) and of different strides (never a false "disjoint"). No GPU needed.
#include "support/catch.hpp"

#include "detail/view_overlap.hpp"

#include <cstdint>
#include <random>
#include <set>

using devmat::Index;
using devmat::detail::Window;
using devmat::detail::windows_overlap;

namespace {

/// The byte addresses a window covers (elements of `elem` bytes).
std::set<std::uintptr_t> bytes_of(const Window& w) {
  std::set<std::uintptr_t> s;
  for (Index r = 0; r < w.rows; ++r)
    for (Index c = 0; c < w.cols; ++c)
      for (std::size_t b = 0; b < w.elem; ++b)
        s.insert(w.first + static_cast<std::uintptr_t>((r * w.stride + c) * static_cast<Index>(w.elem)) + b);
  return s;
}

bool share(const Window& a, const Window& b) {
  const auto sa = bytes_of(a), sb = bytes_of(b);
  for (auto x : sb)
    if (sa.count(x)) return true;
  return false;
}

/// A random window of an R x ld matrix of `elem`-byte elements at `base` (possibly empty).
Window random_window(std::mt19937_64& rng, std::uintptr_t base, Index R, Index C, Index ld, std::size_t elem) {
  std::uniform_int_distribution<Index> row(0, R), col(0, C);
  Index r0 = row(rng), r1 = row(rng), c0 = col(rng), c1 = col(rng);
  if (r0 > r1) std::swap(r0, r1);
  if (c0 > c1) std::swap(c0, c1);
  return {base + static_cast<std::uintptr_t>((r0 * ld + c0) * static_cast<Index>(elem)), r1 - r0, c1 - c0, ld, elem};
}

}  // namespace

TEST_CASE("view overlap: exact for two windows of one matrix") {
  std::mt19937_64 rng(12345);
  const std::uintptr_t base = 1 << 20;
  int overlapping = 0, disjoint = 0;
  for (int it = 0; it < 4000; ++it) {
    const Index R = 1 + static_cast<Index>(rng() % 12), C = 1 + static_cast<Index>(rng() % 12);
    const Index ld = C + static_cast<Index>(rng() % 4);
    const std::size_t elem = std::size_t(1) << (rng() % 4);
    const Window a = random_window(rng, base, R, C, ld, elem), b = random_window(rng, base, R, C, ld, elem);
    CAPTURE(R, C, ld, elem, a.first, a.rows, a.cols, b.first, b.rows, b.cols);
    const bool want = share(a, b);
    CHECK(windows_overlap(a, b) == want);
    CHECK(windows_overlap(b, a) == want);
    (want ? overlapping : disjoint)++;
  }
  CHECK(overlapping > 500);  // both outcomes were exercised
  CHECK(disjoint > 500);
}

TEST_CASE("view overlap: never a false 'disjoint' for windows of different strides or sizes") {
  std::mt19937_64 rng(777);
  const std::uintptr_t base = 1 << 20;
  for (int it = 0; it < 4000; ++it) {
    const Index R = 1 + static_cast<Index>(rng() % 10), C = 1 + static_cast<Index>(rng() % 10);
    const Index lda = C + static_cast<Index>(rng() % 5), ldb = C + static_cast<Index>(rng() % 5);
    const std::size_t ea = std::size_t(1) << (rng() % 3), eb = std::size_t(1) << (rng() % 3);
    const Window a = random_window(rng, base, R, C, lda, ea), b = random_window(rng, base, R, C, ldb, eb);
    CAPTURE(lda, ldb, ea, eb, a.first, a.rows, a.cols, b.first, b.rows, b.cols);
    if (share(a, b)) CHECK(windows_overlap(a, b));
  }
  // Separate allocations never overlap; empty windows never do.
  CHECK_FALSE(windows_overlap(Window{1000, 4, 4, 4, 4}, Window{1064, 4, 4, 4, 4}));
  CHECK_FALSE(windows_overlap(Window{1000, 0, 4, 4, 4}, Window{1000, 4, 4, 4, 4}));
}
