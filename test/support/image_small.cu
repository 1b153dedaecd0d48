// The image kernels of support/image_small.hpp behind plain host functions.
#include "support/image_small.hpp"

#include "dispatch/filter.cuh"
#include "dispatch/image_geometry.cuh"
#include "dispatch/image_morph.cuh"
#include "dispatch/image_neigh.cuh"

#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>

namespace devmat::test::small {
namespace {
/// A stream-ordered scratch buffer of n elements of T.
template <class T>
struct Scratch {
  T* p = nullptr;
  cudaStream_t s;
  Scratch(std::size_t n, cudaStream_t st) : s(st) { DEVMAT_CUDA_TRY(cudaMallocAsync(&p, n * sizeof(T), s)); }
  ~Scratch() { cudaFreeAsync(p, s); }
};
}  // namespace

void box_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols, int kr,
            int kc, bool band, int r) {
  detail::launch_box_u8_small(s, in, ld, out, ld_out, rows, cols, kr, kc,
                              r ? detail::BoxU8Config{band, r} : detail::box_u8_default(kr));
}
void box_u8_slide(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int r, int words) {
  detail::launch_box_u8_small(s, in, ld, out, ld_out, rows, cols, kr, kc, detail::BoxU8Config{false, r, true, words});
}
void box_u8_vec16(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int r, int min_blocks) {
  detail::launch_box_u8_small(s, in, ld, out, ld_out, rows, cols, kr, kc,
                              detail::BoxU8Config{false, r, false, 1, true, min_blocks});
}
void box_u8_two_pass(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                     Index cols, int kr, int kc) {
  if (rows == 0 || cols == 0) return;
  Scratch<std::uint16_t> tmp(static_cast<std::size_t>(rows * cols), s);
  detail::launch_box_pass<std::uint8_t, int, std::uint16_t, true>(s, in, ld, tmp.p, cols, rows, cols, kc, 1.0, 1);
  detail::launch_box_pass<std::uint16_t, int, std::uint8_t, false>(s, tmp.p, cols, out, ld_out, rows, cols, kr,
                                                                  1.0 / (kr * kc), kr * kc);
}
namespace {
template <class T>
void morph_fused(bool erode, cudaStream_t s, const T* in, Index ld, T* out, Index ld_out, Index rows, Index cols, int kr,
                 int kc, int r) {
  if (erode) detail::launch_morph_small<true>(s, in, ld, out, ld_out, rows, cols, kr, kc, r);
  else detail::launch_morph_small<false>(s, in, ld, out, ld_out, rows, cols, kr, kc, r);
}
template <class T>
void morph_passes(bool erode, cudaStream_t s, const T* in, Index ld, T* out, Index ld_out, Index rows, Index cols,
                  int kr, int kc) {
  if (rows == 0 || cols == 0) return;
  Scratch<T> tmp(static_cast<std::size_t>(rows * cols), s);
  const auto run = [&](auto erode_c) {
    constexpr bool kErode = decltype(erode_c)::value;
    detail::launch_morph_pass<T, kErode, true>(s, in, ld, tmp.p, cols, rows, cols, kc);
    detail::launch_morph_pass<T, kErode, false>(s, tmp.p, cols, out, ld_out, rows, cols, kr);
  };
  if (erode) run(std::true_type{});
  else run(std::false_type{});
}
}  // namespace
void morph(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
           Index cols, int kr, int kc, int r) {
  morph_fused(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, r);
}
void morph(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
           int kr, int kc, int r) {
  morph_fused(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, r);
}
void morph_two_pass(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                    Index rows, Index cols, int kr, int kc) {
  morph_passes(erode, s, in, ld, out, ld_out, rows, cols, kr, kc);
}
void morph_two_pass(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows,
                    Index cols, int kr, int kc) {
  morph_passes(erode, s, in, ld, out, ld_out, rows, cols, kr, kc);
}
namespace {
template <class T>
void morph_tiled(bool erode, cudaStream_t s, const T* in, Index ld, T* out, Index ld_out, Index rows, Index cols,
                 int kr, int kc, int shape, int batch) {
  if (erode) detail::launch_morph_tile<true>(s, in, ld, out, ld_out, rows, cols, kr, kc, shape, batch);
  else detail::launch_morph_tile<false>(s, in, ld, out, ld_out, rows, cols, kr, kc, shape, batch);
}
}  // namespace
void morph_tile(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                Index rows, Index cols, int kr, int kc, int shape, int batch) {
  morph_tiled(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, shape, batch);
}
void morph_tile(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                int kr, int kc, int shape, int batch) {
  morph_tiled(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, shape, batch);
}
template <class T>
void morph_streamed(bool erode, cudaStream_t s, const T* in, Index ld, T* out, Index ld_out, Index rows, Index cols, int kr,
                    int kc, int seg, bool doubling, int exact, bool prefetch) {
  if (exact < 0 || exact > 2) throw std::invalid_argument("small::morph_stream: exact " + std::to_string(exact));
  const auto x = static_cast<detail::MorphStreamExact>(exact);
  const auto run = [&](auto erode_c, auto prefetch_c) {
    detail::launch_morph_stream<decltype(erode_c)::value, decltype(prefetch_c)::value>(s, in, ld, out, ld_out, rows,
                                                                                        cols, kr, kc, seg, doubling, x);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (erode) prefetch ? run(Yes{}, Yes{}) : run(Yes{}, No{});
  else prefetch ? run(No{}, Yes{}) : run(No{}, No{});
}
void morph_stream(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                  Index rows, Index cols, int kr, int kc, int seg, bool doubling, int exact, bool prefetch) {
  morph_streamed(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, seg, doubling, exact, prefetch);
}
void morph_stream(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int seg, bool doubling, int exact, bool prefetch) {
  morph_streamed(erode, s, in, ld, out, ld_out, rows, cols, kr, kc, seg, doubling, exact, prefetch);
}
void filter2d_small(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                    const float* w, int k) {
  detail::launch_filter2d_small(s, in, ld, out, ld_out, rows, cols, w, k);
}
void filter2d_direct(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                     const float* w, int k, int r) {
  detail::launch_filter2d_small(s, in, ld, out, ld_out, rows, cols, w, k, detail::Filter2dSmallConfig{true, r});
}
void filter2d_general(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, const float* w, int kh,
                      int kw) {
  if (rows == 0 || cols == 0) return;
  detail::dispatch_filter2d(std::make_integer_sequence<int, (detail::kMaxFilterSide + 1) / 2>{}, kh, s, in, ld, out, rows,
                            cols, w, kw);
}
namespace {
template <class T>
void resize_area_any(cudaStream_t s, const T* in, Index ld, Index src_rows, Index src_cols, T* out, Index rows,
                     Index cols, bool table) {
  // resize_impl's scales: inv = dst / src, scale = 1 / inv, in double.
  const double scale_x = 1.0 / (static_cast<double>(cols) / static_cast<double>(src_cols));
  const double scale_y = 1.0 / (static_cast<double>(rows) / static_cast<double>(src_rows));
  detail::launch_resize_area(s, out, rows, cols, detail::ResizeArea<T>{in, ld, src_rows, src_cols, scale_x, scale_y},
                             table);
}
}  // namespace
void resize_area(cudaStream_t s, const std::uint8_t* in, Index ld, Index src_rows, Index src_cols, std::uint8_t* out,
                 Index rows, Index cols, bool table) {
  resize_area_any(s, in, ld, src_rows, src_cols, out, rows, cols, table);
}
void resize_area(cudaStream_t s, const float* in, Index ld, Index src_rows, Index src_cols, float* out, Index rows,
                 Index cols, bool table) {
  resize_area_any(s, in, ld, src_rows, src_cols, out, rows, cols, table);
}
void resize_half(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                 bool stream_loads) {
  detail::launch_resize_half(s, in, ld, out, rows, cols, stream_loads);
}
void resize_half(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, bool stream_loads) {
  detail::launch_resize_half(s, in, ld, out, rows, cols, stream_loads);
}
}  // namespace devmat::test::small
