// Image filters: filter2d (2D correlation), gaussian_blur (separable) and sobel, borders
// replicated as OpenCV's BORDER_REPLICATE. Launchers: each checks its arguments before any
// launch, runs on the image's stream, and returns a new matrix of the image's shape.
#include "detail/runtime.hpp"
#include "kernels/filter.cuh"

#include <devmat/image.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace devmat {
namespace detail {
namespace {

// Sides past this many blocks of a tile do not fit in grid.x.
void check_grid_x(const char* op, Index rows, Index cols, int tile_w) {
  if (ceil_div(static_cast<unsigned long long>(cols), tile_w) > static_cast<unsigned long long>(INT_MAX))
    throw shape_error(std::string("devmat: ") + op + ": image " + shape_string(rows, cols) + " is too wide");
}

/// (tiles along x, tiles along y capped at kMaxGridY; the kernels loop over the rest).
dim3 tile_grid(Index rows, Index cols, int tile_w, int tile_h, unsigned* tiles_y) {
  const auto ty = ceil_div(static_cast<unsigned long long>(rows), tile_h);
  *tiles_y = static_cast<unsigned>(ty);
  return dim3(static_cast<unsigned>(ceil_div(static_cast<unsigned long long>(cols), tile_w)),
              static_cast<unsigned>(std::min<unsigned long long>(ty, kMaxGridY)));
}

const dim3 kBlock(kFilterThreadsX, kFilterThreadsY);

template <int KH>
void launch_filter2d(cudaStream_t s, const float* img, float* out, Index rows, Index cols, const float* w, int kw) {
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kF2dTileW, kF2dTileH, &tiles_y);
  const std::size_t smem = sizeof(float) * (KH * kw + (kF2dTileH + KH - 1) * (kF2dTileW + kw - 1));  // <= 42 KiB
  filter2d_kernel<KH><<<grid, kBlock, smem, s>>>(img, out, rows, cols, w, kw, tiles_y);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

/// Launches filter2d_kernel<2 I + 1> for the I with kh == 2 I + 1: one instantiation per odd
/// kernel height.
template <int... I>
void dispatch_filter2d(std::integer_sequence<int, I...>, int kh, cudaStream_t s, const float* img, float* out,
                       Index rows, Index cols, const float* w, int kw) {
  const bool found =
      ((kh == 2 * I + 1 ? (launch_filter2d<2 * I + 1>(s, img, out, rows, cols, w, kw), true) : false) || ...);
  if (!found) throw std::logic_error("devmat: filter2d: no kernel for this height");
}

/// Normalised Gaussian weights exp(-d^2 / (2 sigma^2)), d = -radius..radius, in double.
std::vector<float> gaussian_weights(double sigma, int radius) {
  std::vector<double> w(2 * radius + 1);
  double sum = 0;
  for (int k = 0; k <= 2 * radius; ++k) {
    const double d = (k - radius) / sigma;  // +-inf for a denormal sigma: weight 0 off-centre
    w[k] = k == radius ? 1.0 : std::exp(-0.5 * d * d);
    sum += w[k];
  }
  std::vector<float> out(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) out[k] = static_cast<float>(w[k] / sum);
  return out;
}

void launch_gaussian_tiled(cudaStream_t s, const float* in, float* tmp, float* out, Index rows, Index cols,
                           const std::vector<float>& w, int radius) {
  GaussTaps taps{};
  std::copy(w.begin(), w.end(), taps.w);
  const std::size_t n_taps = w.size();
  unsigned tiles_y = 0;
  dim3 grid = tile_grid(rows, cols, kRowTileW, kRowTileH, &tiles_y);
  std::size_t smem = sizeof(float) * (n_taps + kRowTileH * (kRowTileW + 2 * radius));  // <= 8.5 KiB
  gauss_row_kernel<<<grid, kBlock, smem, s>>>(in, tmp, rows, cols, taps, radius, tiles_y);
  DEVMAT_CUDA_TRY(cudaGetLastError());
  grid = tile_grid(rows, cols, kColTileW, kColTileH, &tiles_y);
  smem = sizeof(float) * (n_taps + (kColTileH + 2 * radius) * kColTileW);  // <= 25 KiB
  gauss_col_kernel<<<grid, kBlock, smem, s>>>(tmp, out, rows, cols, taps, radius, tiles_y);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

void launch_gaussian_global(cudaStream_t s, const float* in, float* tmp, float* out, Index rows, Index cols,
                            const float* d_w, int radius) {
  const unsigned long long n = static_cast<unsigned long long>(rows) * static_cast<unsigned long long>(cols);
  const unsigned blocks = static_cast<unsigned>(std::min<unsigned long long>(ceil_div(n, kFilterThreads), 1u << 20));
  gauss_pass_global_kernel<<<blocks, kFilterThreads, 0, s>>>(in, tmp, rows, cols, d_w, radius, true);
  DEVMAT_CUDA_TRY(cudaGetLastError());
  gauss_pass_global_kernel<<<blocks, kFilterThreads, 0, s>>>(tmp, out, rows, cols, d_w, radius, false);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

void launch_sobel(cudaStream_t s, const float* in, float* out, Index rows, Index cols) {
  unsigned tiles_y = 0;
  const dim3 grid = tile_grid(rows, cols, kSobelTileW, kSobelTileH, &tiles_y);
  sobel_kernel<<<grid, kBlock, 0, s>>>(in, out, rows, cols, tiles_y);
  DEVMAT_CUDA_TRY(cudaGetLastError());
}

// Radius ceil(3 sigma) past this is refused (the weights alone would be megabytes).
constexpr double kMaxGaussRadius = 1 << 20;

}  // namespace
}  // namespace detail

DeviceMatrix<float> filter2d(const DeviceMatrix<float>& img, const DeviceMatrix<float>& kernel) {
  const Index kh = kernel.rows(), kw = kernel.cols();
  if (kh < 1 || kw < 1 || kh % 2 == 0 || kw % 2 == 0 || kh > detail::kMaxFilterSide || kw > detail::kMaxFilterSide)
    detail::throw_shape_error("filter2d", img.rows(), img.cols(), kh, kw,
                              "(image and kernel): the kernel must have odd sides from 1 to 31");
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols());
  detail::check_grid_x("filter2d", img.rows(), img.cols(), detail::kF2dTileW);
  const Stream s = img.stream();
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  detail::use_on(s, img, kernel);
  detail::dispatch_filter2d(std::make_integer_sequence<int, (detail::kMaxFilterSide + 1) / 2>{},
                            static_cast<int>(kh), s.native(), img.data(), out.data(), img.rows(), img.cols(),
                            kernel.data(), static_cast<int>(kw));
  return out;
}

DeviceMatrix<float> gaussian_blur(const DeviceMatrix<float>& img, float sigma) {
  if (!(sigma > 0.f) || !std::isfinite(sigma))
    throw std::invalid_argument("devmat: gaussian_blur: sigma must be positive and finite, got " +
                                std::to_string(sigma));
  const double radius_d = std::ceil(3.0 * static_cast<double>(sigma));
  if (radius_d > detail::kMaxGaussRadius)
    throw std::invalid_argument("devmat: gaussian_blur: sigma " + std::to_string(sigma) +
                                " is too large (radius ceil(3 sigma) over 2^20)");
  const int radius = static_cast<int>(radius_d);
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols());
  detail::check_grid_x("gaussian_blur", img.rows(), img.cols(), detail::kColTileW);
  const std::vector<float> w = detail::gaussian_weights(static_cast<double>(sigma), radius);
  const Stream s = img.stream();
  DeviceMatrix<float> tmp(img.rows(), img.cols(), s);  // the row pass's output
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  detail::use_on(s, img);
  if (radius <= detail::kMaxTiledGaussRadius) {
    detail::launch_gaussian_tiled(s.native(), img.data(), tmp.data(), out.data(), img.rows(), img.cols(), w, radius);
  } else {
    // Too many weights for a kernel parameter: upload them (pageable to device, no device sync).
    const auto d_w = DeviceMatrix<float>::from_host(w.data(), 1, static_cast<Index>(w.size()), s);
    detail::launch_gaussian_global(s.native(), img.data(), tmp.data(), out.data(), img.rows(), img.cols(),
                                   d_w.data(), radius);
  }
  return out;  // tmp and d_w are freed stream-ordered, after the kernels
}

DeviceMatrix<float> sobel(const DeviceMatrix<float>& img) {
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols());
  detail::check_grid_x("sobel", img.rows(), img.cols(), detail::kSobelTileW);
  const Stream s = img.stream();
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  detail::use_on(s, img);
  detail::launch_sobel(s.native(), img.data(), out.data(), img.rows(), img.cols());
  return out;
}

}  // namespace devmat
