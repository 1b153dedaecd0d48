// The candidate image kernels (src/kernels/image_next.cuh) run on the CPU through the CUDA
// emulation (expr_emu/: a block's threads are host threads; a misaligned vector load aborts)
// against plain C++ definitions of the operations: u8 box (BORDER_REFLECT_101, rounded half
// up), u8 erode/dilate (pixels outside ignored), u8 threshold (OpenCV's five types), u8
// rgb_to_gray (OpenCV's 14-bit fixed point), f32 filter2d 5x5 (BORDER_REPLICATE). A host test,
// so CI checks the index math, the borders and the vector/byte paths that test_image_next
// checks on the GPU. Small grids on purpose (grid.y 1 or 2, few stream blocks) so the kernels'
// loops over the tiles past the grid run too. Inputs at odd offsets with odd strides; outputs
// inside a poisoned margin, u8 poisoned with 0 and 255 in turn.
#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/catch.hpp"

#include "emu_cuda.hpp"

// What the candidate kernels use beyond the emulation's intrinsics.
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline unsigned __vcmpgtu4(unsigned a, unsigned b) {
  unsigned r = 0;
  for (int k = 0; k < 4; ++k) r |= (((a >> (8 * k)) & 255u) > ((b >> (8 * k)) & 255u) ? 255u : 0u) << (8 * k);
  return r;
}
// image_intensity.cuh's histogram and lookup tables (not run here).
inline int __float2int_rn(float v) { return static_cast<int>(std::nearbyint(v)); }
inline int atomicAdd(int* p, int v) {
  const int old = *p;
  *p += v;
  return old;
}

#include "kernels/image_next.cuh"

using devmat::Index;
namespace d = devmat::detail;

namespace {
using U8 = std::uint8_t;

std::mt19937& gen() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

/// An r x c image stored at an odd offset (row 1, column 3) of an (r + 3) x (c + 7) buffer, or
/// dense (`offset` false: the vector's start, 16-byte aligned; rows aligned where c allows).
template <class T>
struct Image {
  Index rows, cols, ld, first;
  std::vector<T> buf;
  Image(Index r, Index c, bool offset = true)
      : rows(r), cols(c), ld(offset ? c + 7 : c), first(offset ? ld + 3 : 0),
        buf(static_cast<std::size_t>(offset ? (r + 3) * (c + 7) : r * c)) {
    if constexpr (std::is_same_v<T, float>) {
      std::uniform_real_distribution<float> dist(-1.f, 1.f);
      for (T& v : buf) v = dist(gen());
    } else {
      std::uniform_int_distribution<int> dist(0, 255);
      for (T& v : buf) v = static_cast<T>(dist(gen()));
    }
  }
  const T* data() const { return buf.data() + first; }
  T at(Index y, Index x) const { return data()[y * ld + x]; }
};

/// An r x c output at (row 1, column 2) of an (r + 2) x (c + 5) buffer filled with `poison`,
/// or dense (`padded` false).
template <class T>
struct Output {
  Index rows, cols, ld, y0, x0;
  T poison;
  std::vector<T> buf;
  Output(Index r, Index c, T p, bool padded = true)
      : rows(r), cols(c), ld(padded ? c + 5 : c), y0(padded), x0(padded ? 2 : 0), poison(p),
        buf(static_cast<std::size_t>(padded ? (r + 2) * (c + 5) : r * c), p) {}
  T* data() { return buf.data() + y0 * ld + x0; }
  T at(Index y, Index x) const { return buf[(y + y0) * ld + x + x0]; }
  /// Elements of the margin that are no longer the poison.
  Index margin_changed() const {
    Index n = 0;
    for (Index y = 0; y < rows + 2 * y0; ++y)
      for (Index x = 0; x < ld; ++x) {
        const bool inside = y >= y0 && y < rows + y0 && x >= x0 && x < cols + x0;
        const T v = buf[y * ld + x];
        if (!inside) n += !(v == poison || (std::isnan(double(v)) && std::isnan(double(poison))));
      }
    return n;
  }
};

Index reflect(Index i, Index n) { return d::reflect101(i, n); }

template <class Ref>
void check_u8(const Output<U8>& out, Ref&& want) {
  Index bad = 0;
  for (Index y = 0; y < out.rows; ++y)
    for (Index x = 0; x < out.cols; ++x) bad += out.at(y, x) != want(y, x);
  CHECK(bad == 0);
  CHECK(out.margin_changed() == 0);
}

/// The neighbourhood kernels' grid for R rows a thread, with grid.y cut to `grid_y` (the
/// kernels loop over the rest).
template <int R>
dim3 nbr_grid(Index rows, Index cols, unsigned grid_y, unsigned* tiles_y) {
  *tiles_y = static_cast<unsigned>((rows + d::kNbrTileH<R> - 1) / d::kNbrTileH<R>);
  return dim3(static_cast<unsigned>((cols + d::kNbrTileW - 1) / d::kNbrTileW), std::min(grid_y, *tiles_y));
}

/// f(std::integral_constant<int, R>) for R = 4, 8, 16 (rows a thread).
template <class F>
void for_each_rows_per_thread(F&& f) {
  f(std::integral_constant<int, 4>{});
  f(std::integral_constant<int, 8>{});
  f(std::integral_constant<int, 16>{});
}

const std::vector<std::pair<Index, Index>> kShapes = {{1, 1},  {1, 2},   {2, 1},   {1, 9},   {9, 1},   {2, 2},
                                                      {3, 3},  {4, 5},   {5, 4},   {6, 7},   {1, 131}, {131, 1},
                                                      {13, 17}, {63, 127}, {64, 128}, {65, 129}, {130, 7}, {7, 261}};

/// Runs the fused box (`erode` unused) or morphology kernel of side k, R rows a thread, on img.
template <int R>
void run_nbr(bool box, bool erode, int k, const Image<U8>& img, Output<U8>& out, unsigned grid_y) {
  const Index r = img.rows, c = img.cols;
  unsigned tiles_y = 0;
  const dim3 grid = nbr_grid<R>(r, c, grid_y, &tiles_y);
  emu::launch(grid, dim3(d::kNbrThreadsX, d::kNbrThreadsY), [&] {
    const auto run = [&](auto kernel) { kernel(img.data(), img.ld, out.data(), out.ld, r, c, tiles_y); };
    if (box) k == 3 ? run(d::box_u8_fused_kernel<3, R>) : run(d::box_u8_fused_kernel<5, R>);
    else if (k == 3) erode ? run(d::morph_u8_fused_kernel<3, true, R>) : run(d::morph_u8_fused_kernel<3, false, R>);
    else if (k == 5) erode ? run(d::morph_u8_fused_kernel<5, true, R>) : run(d::morph_u8_fused_kernel<5, false, R>);
    else erode ? run(d::morph_u8_fused_kernel<7, true, R>) : run(d::morph_u8_fused_kernel<7, false, R>);
  });
}
}  // namespace

TEST_CASE("emulated fused u8 box 3x3 and 5x5 equal the reflected box mean", "[image][next][emulation]") {
  for (const auto& [r, c] : kShapes)
    for (bool offset : {true, false}) {
      const Image<U8> img(r, c, offset);
      for (int k : {3, 5})
        for_each_rows_per_thread([&](auto rows_per_thread) {
          constexpr int R = decltype(rows_per_thread)::value;
          for (U8 poison : {U8(0), U8(255)}) {
            CAPTURE(img.rows, img.cols, offset, k, R, int(poison));
            Output<U8> out(img.rows, img.cols, poison, offset);
            run_nbr<R>(true, false, k, img, out, 2);
            check_u8(out, [&](Index y, Index x) {
              int s = 0;
              for (int i = -k / 2; i <= k / 2; ++i)
                for (int j = -k / 2; j <= k / 2; ++j) s += img.at(reflect(y + i, img.rows), reflect(x + j, img.cols));
              return static_cast<U8>((2 * s + k * k) / (2 * k * k));
            });
          }
        });
    }
}

TEST_CASE("emulated fused u8 erode and dilate 3x3, 5x5, 7x7 equal the clipped window's min and max",
          "[image][next][emulation]") {
  for (const auto& [r, c] : kShapes)
    for (bool offset : {true, false}) {
      const Image<U8> img(r, c, offset);
      for (int k : {3, 5, 7})
        for (bool erode : {true, false})
          for_each_rows_per_thread([&](auto rows_per_thread) {
            constexpr int R = decltype(rows_per_thread)::value;
            for (U8 poison : {U8(0), U8(255)}) {
              CAPTURE(img.rows, img.cols, offset, k, erode, R, int(poison));
              Output<U8> out(img.rows, img.cols, poison, offset);
              run_nbr<R>(false, erode, k, img, out, 1);
              const Index rr = img.rows, cc = img.cols;
              check_u8(out, [&](Index y, Index x) {
                int v = erode ? 255 : 0;
                for (Index i = std::max<Index>(0, y - k / 2); i < std::min<Index>(rr, y - k / 2 + k); ++i)
                  for (Index j = std::max<Index>(0, x - k / 2); j < std::min<Index>(cc, x - k / 2 + k); ++j)
                    v = erode ? std::min<int>(v, img.at(i, j)) : std::max<int>(v, img.at(i, j));
                return static_cast<U8>(v);
              });
            }
          });
    }
}

namespace {
/// Runs stream_u8_kernel on 3 blocks (grid-stride over the rest).
template <int N, class F>
void run_stream(const d::StreamArgs<N>& a, Output<U8>& out, F f) {
  emu::launch(dim3(3), dim3(d::kStreamThreads), [&] { d::stream_u8_kernel<N, F>(a, out.data(), out.ld, out.rows, out.cols, f); });
}
}  // namespace

TEST_CASE("emulated streaming u8 threshold equals OpenCV's definition for every type", "[image][next][emulation]") {
  // Dense input and output (uint4 loads and stores on every whole chunk, whatever the width) and
  // an offset input with a padded output (bytes).
  for (const auto& rc : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 17}, {5, 64}, {4, 100}, {2, 300}}) {
    const Index r = rc.first, c = rc.second;
    const Image<U8> img(r, c);
    std::vector<U8> dense(static_cast<std::size_t>(r * c));
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) dense[y * c + x] = img.at(y, x);
    for (int kind = 0; kind < 5; ++kind)
      for (int t : {-1, 0, 77, 128, 254, 255})
        for (int maxval : {255, 100, 0})
          for (bool aligned : {false, true}) {
            CAPTURE(r, c, kind, t, maxval, aligned);
            d::StreamArgs<1> a{};
            a.in[0] = aligned ? dense.data() : img.data();
            a.ld[0] = aligned ? c : img.ld;
            const unsigned t8 = t < 0 ? 0u : static_cast<unsigned>(t);
            Output<U8> out(r, c, U8(kind * 50 + 3), !aligned);  // dense: the 16-byte stores
            run_stream(a, out, d::ThresholdWord{t8 * 0x01010101u, static_cast<unsigned>(maxval) * 0x01010101u, t, kind});
            check_u8(out, [&](Index y, Index x) {
              const int p = img.at(y, x);
              const bool above = p > t;
              switch (kind) {
                case 0: return static_cast<U8>(above ? maxval : 0);
                case 1: return static_cast<U8>(above ? 0 : maxval);
                case 2: return static_cast<U8>(above ? std::max(t, 0) : p);
                case 3: return static_cast<U8>(above ? p : 0);
                default: return static_cast<U8>(above ? 0 : p);
              }
            });
          }
  }
}

TEST_CASE("emulated streaming u8 rgb_to_gray equals OpenCV's fixed point", "[image][next][emulation]") {
  for (const auto& rc : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 17}, {5, 64}, {4, 100}, {2, 300}, {37, 41}}) {
    const Index r = rc.first, c = rc.second;
    const Image<U8> pr(r, c), pg(r, c), pb(r, c);
    std::vector<U8> dr(static_cast<std::size_t>(r * c)), dg(dr.size()), db(dr.size());
    for (Index y = 0; y < r; ++y)
      for (Index x = 0; x < c; ++x) {
        dr[y * c + x] = pr.at(y, x);
        dg[y * c + x] = pg.at(y, x);
        db[y * c + x] = pb.at(y, x);
      }
    for (bool aligned : {false, true}) {
      CAPTURE(r, c, aligned);
      d::StreamArgs<3> a{};
      a.in[0] = aligned ? dr.data() : pr.data();
      a.in[1] = aligned ? dg.data() : pg.data();
      a.in[2] = aligned ? db.data() : pb.data();
      for (int k = 0; k < 3; ++k) a.ld[k] = aligned ? c : pr.ld;
      Output<U8> out(r, c, U8(7), !aligned);
      run_stream(a, out, d::GrayWord{});
      check_u8(out, [&](Index y, Index x) {
        return static_cast<U8>((pr.at(y, x) * 4899 + pg.at(y, x) * 9617 + pb.at(y, x) * 1868 + (1 << 13)) >> 14);
      });
    }
  }
}

TEST_CASE("emulated register-blocked f32 filter2d 5x5 equals the replicated correlation", "[image][next][emulation]") {
  d::Taps5x5 taps{};
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  double scale = 0;
  for (float& w : taps.w) scale += std::fabs(w = dist(gen()));
  // The float4 tile path needs whole tiles inside on 16-byte rows: a dense 200 x 272 image
  // (ld 272) has interior tiles; the offset images take the clamped path everywhere.
  std::vector<std::pair<Index, Index>> shapes = kShapes;
  shapes.push_back({200, 272});
  shapes.push_back({140, 400});
  for (const auto& rc : shapes) {
    const Index r = rc.first, c = rc.second;
    const Image<float> img(r, c);
    for (bool dense : {false, true}) {
      CAPTURE(r, c, dense);
      std::vector<float> dbuf(static_cast<std::size_t>(r * c));
      for (Index y = 0; y < r; ++y)
        for (Index x = 0; x < c; ++x) dbuf[y * c + x] = img.at(y, x);
      const float* in = dense ? dbuf.data() : img.data();
      const Index ld = dense ? c : img.ld;
      Output<float> out(r, c, NAN, !dense);
      const unsigned tiles_y = static_cast<unsigned>((r + d::kF5TileH - 1) / d::kF5TileH);
      const dim3 grid(static_cast<unsigned>((c + d::kF5TileW - 1) / d::kF5TileW), std::min(2u, tiles_y));
      emu::launch(grid, dim3(d::kF5ThreadsX, d::kF5ThreadsY),
                  [&] { d::filter2d_5x5_kernel(in, ld, out.data(), out.ld, r, c, taps, tiles_y); });
      Index bad = 0;
      double worst = 0;
      for (Index y = 0; y < r; ++y)
        for (Index x = 0; x < c; ++x) {
          double s = 0;
          for (int i = 0; i < 5; ++i)
            for (int j = 0; j < 5; ++j)
              s += double(taps.w[i * 5 + j]) * img.at(std::clamp<Index>(y + i - 2, 0, r - 1), std::clamp<Index>(x + j - 2, 0, c - 1));
          const double diff = std::fabs(s - out.at(y, x));
          bad += !(diff <= 1e-5 * scale);
          worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
        }
      CAPTURE(worst);
      CHECK(bad == 0);
      CHECK(out.margin_changed() == 0);
    }
  }
}
