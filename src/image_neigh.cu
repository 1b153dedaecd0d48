// Neighbourhood operations: box_filter (two separable passes of running sums, borders
// reflected as OpenCV's default BORDER_REFLECT_101; u8 means of sides 3 and 5 in one fused pass), median_blur (forgetful selection, borders
// replicated as OpenCV's medianBlur) and integral (row scans, then column scans,
// OpenCV's (rows + 1) x (cols + 1) layout). Arguments are checked before any launch; results
// are new matrices on the image's stream. A view is an image of its own (its edges are the
// borders; OpenCV's BORDER_ISOLATED).
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/image_canny.cuh"
#include "dispatch/image_median.cuh"
#include "dispatch/image_neigh.cuh"
#include "dispatch/workspace.hpp"

#include <devmat/image.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace devmat {
namespace detail {
namespace {

/// Sums of u8 in int (exact), of float in double.
template <class T>
using BoxAcc = std::conditional_t<std::is_same_v<T, std::uint8_t>, int, double>;
/// The row pass's output, read by the column pass: for u8 a uint16 (a row sum is at most
/// 255 x 255 < 2^16: half the traffic of an int), float for float.
template <class T>
using BoxTmp = std::conditional_t<std::is_same_v<T, std::uint8_t>, std::uint16_t, float>;

template <class T>
DeviceMatrix<T> box(const MatrixView<const T>& img, int ksize_rows, int ksize_cols, bool normalize) {
  if (ksize_rows < 1 || ksize_cols < 1 || ksize_rows > kMaxBoxSide || ksize_cols > kMaxBoxSide)
    throw_shape_error("box_filter", img.rows(), img.cols(), ksize_rows, ksize_cols,
                      "(image and kernel): the kernel's sides must be from 1 to 255");
  if (img.empty()) return DeviceMatrix<T>(img.rows(), img.cols(), img.stream());
  check_grid_x("box_filter", img.rows(), img.cols(), kBoxAlong);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  const Index rows = img.rows(), cols = img.cols();
  DeviceMatrix<T> out(rows, cols, s);
  if (std::is_same_v<T, std::uint8_t> && normalize && box_u8_small(ksize_rows, ksize_cols)) {
    use_on(s, img);
    if constexpr (std::is_same_v<T, std::uint8_t>)
      launch_box_u8_small(s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_rows, ksize_cols,
                          box_u8_default(ksize_rows));
    return out;
  }
  const int area = normalize ? ksize_rows * ksize_cols : 1;
  const double scale = 1.0 / area;
  const auto tmp = Workspace::of<BoxTmp<T>>(static_cast<std::size_t>(img.size()), s);
  use_on(s, img);
  launch_box_pass<T, BoxAcc<T>, BoxTmp<T>, true>(s.native(), img.data(), img.stride(), tmp.template as<BoxTmp<T>>(), cols,
                                                 rows, cols, ksize_cols, 1.0, 1);
  launch_box_pass<BoxTmp<T>, BoxAcc<T>, T, false>(s.native(), tmp.template as<const BoxTmp<T>>(), cols, out.data(), cols,
                                                  rows, cols, ksize_rows, scale, area);
  return out;  // tmp is freed stream-ordered, after the kernels
}

template <class T, class Acc>
DeviceMatrix<Acc> integral_image(const MatrixView<const T>& img) {
  const Index rows = img.rows(), cols = img.cols();
  const Stream s = img.stream();
  const DeviceGuard device(s);
  DeviceMatrix<Acc> out(rows + 1, cols + 1, s);
  use_on(s, img);
  launch_integral<T, Acc>(s.native(), img.data(), img.stride(), out.data(), cols + 1, rows, cols);
  return out;
}

template <class T>
DeviceMatrix<T> median(const MatrixView<const T>& img, int ksize) {
  constexpr bool kU8 = std::is_same_v<T, std::uint8_t>;
  if (!(ksize == 1 || ksize == 3 || ksize == 5 || (kU8 && ksize == 7)))
    throw shape_error("devmat: median_blur: ksize " + std::to_string(ksize) + " on a " +
                      shape_string(img.rows(), img.cols()) + (kU8 ? " u8 image: must be 1, 3, 5 or 7" : " float image: must be 1, 3 or 5 (as OpenCV's)"));
  if (img.empty()) return DeviceMatrix<T>(img.rows(), img.cols(), img.stream());
  check_grid_x("median_blur", img.rows(), img.cols(), kMedianTileWF32);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  const Index rows = img.rows(), cols = img.cols();
  DeviceMatrix<T> out(rows, cols, s);
  use_on(s, img);
  switch (ksize) {
    case 1: copy_rows(out.data(), cols, img.data(), img.stride(), rows, cols, s); break;
    // Two rows a thread sharing their windows' common values ("pair"), and for float 5x5 a 2x2
    // block a thread ("quad"): run S3 (H200, 4096^2, NPP = 1): u8 3x3 0.951 -> 1.090, 5x5 0.893 ->
    // 1.398, 7x7 1.321 -> 2.336; f32 3x3 0.980 -> 1.122, 5x5 0.731 -> 1.371 (quad; pair 1.153).
    case 3: launch_median<3>(s.native(), img.data(), img.stride(), out.data(), rows, cols, true); break;
    case 5:
      if constexpr (kU8) launch_median<5>(s.native(), img.data(), img.stride(), out.data(), rows, cols, true);
      else launch_median_f32_quad(s.native(), img.data(), img.stride(), out.data(), rows, cols);
      break;
    default:
      if constexpr (kU8) launch_median<7>(s.native(), img.data(), img.stride(), out.data(), rows, cols, true);
  }
  return out;
}

}  // namespace
}  // namespace detail

Image8 canny(const MatrixView<const std::uint8_t>& img, double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high) || low > high)
    throw std::invalid_argument("devmat: canny: thresholds must be finite with low <= high, got low " +
                                std::to_string(low) + ", high " + std::to_string(high));
  if (img.empty()) return Image8(img.rows(), img.cols(), img.stream());
  detail::check_grid_x("canny", img.rows(), img.cols(), detail::kCannyTile);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  Image8 out(img.rows(), img.cols(), s);
  detail::use_on(s, img);
  // As OpenCV: integer thresholds floor(low), floor(high) on |dx| + |dy| (at most 2040).
  const auto to_int = [](double t) { return static_cast<int>(std::floor(std::max(-1e9, std::min(1e9, t)))); };
  detail::launch_canny(s, img.data(), img.stride(), out.data(), img.rows(), img.cols(), to_int(low), to_int(high));
  return out;
}

Image8 median_blur(const MatrixView<const std::uint8_t>& img, int ksize) { return detail::median(img, ksize); }
DeviceMatrix<float> median_blur(const MatrixView<const float>& img, int ksize) { return detail::median(img, ksize); }

Image8 box_filter(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols, bool normalize) {
  return detail::box<std::uint8_t>(img, ksize_rows, ksize_cols, normalize);
}
DeviceMatrix<float> box_filter(const MatrixView<const float>& img, int ksize_rows, int ksize_cols, bool normalize) {
  return detail::box<float>(img, ksize_rows, ksize_cols, normalize);
}

DeviceMatrix<std::int32_t> integral(const MatrixView<const std::uint8_t>& img) {
  return detail::integral_image<std::uint8_t, std::int32_t>(img);
}
DeviceMatrix<double> integral(const MatrixView<const float>& img) {
  return detail::integral_image<float, double>(img);
}

}  // namespace devmat
