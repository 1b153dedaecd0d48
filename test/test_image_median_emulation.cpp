// The median kernels (kernels/image_median.cuh) run on the CPU through the CUDA emulation
// (expr_emu/) against the window's median with replicated borders (support/median_ref.hpp) (OpenCV's medianBlur), exact: u8
// 3, 5, 7 and f32 3, 5, each in both forms (one output a thread per row, and pairs of rows
// sharing their windows' common values), and f32 5x5 four outputs a thread (2 x 2 blocks). Odd shapes (1xN, Nx1, primes, one past the tiles),
// inputs at an odd offset with an odd stride, outputs inside a poisoned margin, grid.y cut to
// 1 so the loop over the tiles past the grid runs; many ties (u8 of few levels).
#include <math.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/catch.hpp"
#include "support/median_ref.hpp"

#include "emu_cuda.hpp"
#include "emu_image.hpp"

#include "kernels/image_median.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
/// kPair 2: f32 5x5 by the four-outputs-a-thread kernel.
template <class T, int K, int kPair>
void check_median(Index r, Index c, int levels) {
  const bool f32 = std::is_same_v<T, float>;
  CAPTURE(r, c, K, kPair, levels, f32);  // kPair: 0 single rows, 1 row pairs, 2 quads
  const Index ld = c + 7;  // the input at row 1, column 3: an odd offset and stride
  std::vector<T> buf(static_cast<std::size_t>((r + 3) * ld));
  std::uniform_int_distribution<int> dist(0, levels - 1);
  for (T& v : buf) v = std::is_same_v<T, float> ? static_cast<T>(dist(emu::rng()) * 0.37f - 20.f) : static_cast<T>(dist(emu::rng()));
  const T* in = buf.data() + ld + 3;
  const Index ld_out = c + 5;  // the output at row 1, column 2 of a poisoned buffer
  const T poison = static_cast<T>(std::is_same_v<T, float> ? -1e30 : 251);
  std::vector<T> obuf(static_cast<std::size_t>((r + 2) * ld_out), poison);
  T* out = obuf.data() + ld_out + 2;
  const int tile_w = kPair == 2 ? d::kMedianQuadTileW : std::is_same_v<T, float> ? d::kMedianTileWF32 : d::kMedianTileWU8;
  const unsigned tiles_y = static_cast<unsigned>((r + d::kMedianTileH - 1) / d::kMedianTileH);
  const dim3 grid(static_cast<unsigned>((c + tile_w - 1) / tile_w), 1);
  emu::launch(grid, dim3(d::kMedianThreadsX, d::kMedianThreadsY), [&] {
    if constexpr (kPair == 2) d::median_f32_quad_kernel<K>(in, ld, out, ld_out, r, c, tiles_y);
    else if constexpr (std::is_same_v<T, float>) d::median_f32_kernel<K, kPair == 1>(in, ld, out, ld_out, r, c, tiles_y);
    else d::median_u8_kernel<K, kPair == 1>(in, ld, out, ld_out, r, c, tiles_y);
  });
  Index bad = 0, margin = 0;
  for (Index y = -1; y <= r; ++y)
    for (Index x = -2; x < ld_out - 2; ++x) {
      const T got = out[y * ld_out + x];
      if (y < 0 || y >= r || x < 0 || x >= c) {
        margin += got != poison;
        continue;
      }
      bad += got != devmat::test::median_reference_at(in, r, c, ld, K, y, x);
    }
  CHECK(bad == 0);
  CHECK(margin == 0);
}

const std::vector<std::pair<Index, Index>> kShapes = {{1, 1},  {1, 2},  {2, 1},   {1, 131}, {131, 1}, {3, 3},  {5, 7},
                                                      {31, 33}, {32, 32}, {33, 129}, {65, 127}, {67, 131}, {2, 300}};
}  // namespace

TEST_CASE("emulated median kernels, single and paired rows, equal the sorted window", "[image][median][emulation]") {
  for (const auto& [r, c] : kShapes)
    for (int levels : {256, 3}) {
      check_median<std::uint8_t, 3, 0>(r, c, levels);
      check_median<std::uint8_t, 3, 1>(r, c, levels);
      check_median<std::uint8_t, 5, 0>(r, c, levels);
      check_median<std::uint8_t, 5, 1>(r, c, levels);
      check_median<std::uint8_t, 7, 0>(r, c, levels);
      check_median<std::uint8_t, 7, 1>(r, c, levels);
      check_median<float, 3, 0>(r, c, levels);
      check_median<float, 3, 1>(r, c, levels);
      check_median<float, 5, 0>(r, c, levels);
      check_median<float, 5, 1>(r, c, levels);
      check_median<float, 5, 2>(r, c, levels);
    }
}
