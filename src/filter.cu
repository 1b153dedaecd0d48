// Image filters: filter2d (2D correlation; 3x3, 5x5 and 7x7 register-blocked), gaussian_blur (separable) and sobel, borders
// replicated as OpenCV's BORDER_REPLICATE. Each checks its arguments before any launch, runs on
// the image's stream, and returns a new matrix of the image's shape (dispatch/filter.cuh
// launches the kernels). A view is read in place through its stride and filtered as an image
// of its own: its edges are the borders (OpenCV's BORDER_ISOLATED).
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/filter.cuh"
#include "dispatch/workspace.hpp"

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

// Radius ceil(3 sigma) past this is refused (the weights alone would be megabytes).
constexpr double kMaxGaussRadius = 1 << 20;

}  // namespace
}  // namespace detail

DeviceMatrix<float> filter2d(const MatrixView<const float>& img, const MatrixView<const float>& kernel_window) {
  const Index kh = kernel_window.rows(), kw = kernel_window.cols();
  if (kh < 1 || kw < 1 || kh % 2 == 0 || kw % 2 == 0 || kh > detail::kMaxFilterSide || kw > detail::kMaxFilterSide)
    detail::throw_shape_error("filter2d", img.rows(), img.cols(), kh, kw,
                              "(image and kernel): the kernel must have odd sides from 1 to 31");
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols(), img.stream());
  detail::check_grid_x("filter2d", img.rows(), img.cols(), detail::kF2dTileW);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  // The weights are read as one dense block: a strided kernel window is copied first (it is small).
  const DeviceMatrix<float> dense_kernel = kernel_window.contiguous() ? DeviceMatrix<float>() : DeviceMatrix<float>(kernel_window);
  const MatrixView<const float> kernel = kernel_window.contiguous() ? kernel_window : dense_kernel.view();
  detail::use_on(s, img, kernel);
  if (detail::filter2d_small(kh, kw))
    detail::launch_filter2d_small(s.native(), img.data(), img.stride(), out.data(), img.cols(), img.rows(), img.cols(),
                                  kernel.data(), static_cast<int>(kh), detail::filter2d_small_default(static_cast<int>(kh)));
  else
    detail::dispatch_filter2d(std::make_integer_sequence<int, (detail::kMaxFilterSide + 1) / 2>{},
                              static_cast<int>(kh), s.native(), img.data(), img.stride(), out.data(), img.rows(),
                              img.cols(), kernel.data(), static_cast<int>(kw));
  return out;
}

DeviceMatrix<float> gaussian_blur(const MatrixView<const float>& img, float sigma) {
  if (!(sigma > 0.f) || !std::isfinite(sigma))
    throw std::invalid_argument("devmat: gaussian_blur: sigma must be positive and finite, got " +
                                std::to_string(sigma));
  const double radius_d = std::ceil(3.0 * static_cast<double>(sigma));
  if (radius_d > detail::kMaxGaussRadius)
    throw std::invalid_argument("devmat: gaussian_blur: sigma " + std::to_string(sigma) +
                                " is too large (radius ceil(3 sigma) over 2^20)");
  const int radius = static_cast<int>(radius_d);
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols(), img.stream());
  detail::check_grid_x("gaussian_blur", img.rows(), img.cols(), detail::kColTileW);
  const std::vector<float> w = detail::gaussian_weights(static_cast<double>(sigma), radius);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  const auto tmp = detail::Workspace::of<float>(static_cast<std::size_t>(img.size()), s);  // the row pass's output
  detail::use_on(s, img);
  if (radius <= detail::kMaxTiledGaussRadius) {
    detail::launch_gaussian_tiled(s.native(), img.data(), img.stride(), tmp.as<float>(), out.data(), img.rows(), img.cols(), w,
                                  radius);
  } else {
    // Too many weights for a kernel parameter: upload them. From pageable memory the copy
    // returns once the weights are staged, so `w` may go at once.
    const auto d_w = detail::Workspace::of<float>(w.size(), s);
    DEVMAT_CUDA_TRY(cudaMemcpyAsync(d_w.as<float>(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice,
                                    s.native()));
    detail::launch_gaussian_global(s.native(), img.data(), img.stride(), tmp.as<float>(), out.data(), img.rows(), img.cols(),
                                   d_w.as<const float>(), radius);
  }
  return out;  // tmp and d_w are freed stream-ordered, after the kernels
}

DeviceMatrix<float> sobel(const MatrixView<const float>& img) {
  if (img.empty()) return DeviceMatrix<float>(img.rows(), img.cols(), img.stream());
  detail::check_grid_x("sobel", img.rows(), img.cols(), detail::kSobelTileW);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  detail::use_on(s, img);
  detail::launch_sobel(s.native(), img.data(), img.stride(), out.data(), img.rows(), img.cols());
  return out;
}

}  // namespace devmat
