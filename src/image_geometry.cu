// Geometry: resize, warp_affine, flip, rotate90 on u8 and f32 images, OpenCV 4's results
// (kernels/image_geometry.cuh says where the arithmetic follows OpenCV's). Each checks its
// arguments before any launch, runs on the image's stream and returns a new matrix; a view is
// read in place through its stride.
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/image_geometry.cuh"

#include <devmat/image.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace devmat {
namespace detail {
namespace {

void check_interp(const char* op, Interp interp) {
  if (interp != Interp::nearest && interp != Interp::linear && interp != Interp::area)
    throw std::invalid_argument(std::string("devmat: ") + op + ": unknown Interp " +
                                std::to_string(static_cast<int>(interp)));
}

void check_out_size(const char* op, const char* why_prefix, Index src_rows, Index src_cols, Index rows, Index cols) {
  if (rows < 1 || cols < 1)
    throw_shape_error(op, src_rows, src_cols, rows, cols, "(image and output size): the output needs at least one pixel");
  if (src_rows == 0 || src_cols == 0)
    throw_shape_error(op, src_rows, src_cols, rows, cols, why_prefix);
}

template <class T>
DeviceMatrix<T> resize_impl(const MatrixView<const T>& img, Index rows, Index cols, Interp interp) {
  check_interp("resize", interp);
  check_out_size("resize", "(image and output size): an empty image has nothing to resize", img.rows(), img.cols(),
                 rows, cols);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  DeviceMatrix<T> out(rows, cols, s);
  use_on(s, img);
  // OpenCV: inv_scale = dst / src, scale = 1 / inv_scale, in double.
  const double inv_x = static_cast<double>(cols) / static_cast<double>(img.cols());
  const double inv_y = static_cast<double>(rows) / static_cast<double>(img.rows());
  const double scale_x = 1.0 / inv_x, scale_y = 1.0 / inv_y;
  if (interp != Interp::nearest && img.rows() == 2 * rows && img.cols() == 2 * cols) {
    // Exactly half size: OpenCV's fast area path, which cv::resize takes for linear too.
    launch_resize_half(s.native(), img.data(), img.stride(), out.data(), rows, cols);
  } else if (interp == Interp::nearest) {
    launch_geom_map(s.native(), out.data(), rows, cols,
                    ResizeNearest<T>{img.data(), img.stride(), NearestIndex{scale_x, img.cols()},
                                     NearestIndex{scale_y, img.rows()}});
  } else if (interp == Interp::area && scale_x >= 1.0 && scale_y >= 1.0) {
    launch_resize_area(s.native(), out.data(), rows, cols,
                       ResizeArea<T>{img.data(), img.stride(), img.rows(), img.cols(), scale_x, scale_y});
  } else if (interp == Interp::area) {  // enlarging along an axis: OpenCV's area-mode bilinear
    launch_geom_map(s.native(), out.data(), rows, cols,
                    ResizeLinear<T, true>{img.data(), img.stride(), img.rows(), img.cols(), scale_x, inv_x, scale_y,
                                          inv_y});
  } else {
    launch_geom_map(s.native(), out.data(), rows, cols,
                    ResizeLinear<T, false>{img.data(), img.stride(), img.rows(), img.cols(), scale_x, inv_x, scale_y,
                                           inv_y});
  }
  return out;
}

template <class T, bool kLinear, bool kReplicate>
void launch_warp(cudaStream_t s, const MatrixView<const T>& img, const double* m, T* out, Index rows, Index cols,
                 T cval) {
  launch_geom_map(s, out, rows, cols,
                  WarpAffine<T, kLinear, kReplicate>{img.data(), img.stride(), img.rows(), img.cols(), m[0], m[1],
                                                     m[2], m[3], m[4], m[5], cval});
}

template <class T>
DeviceMatrix<T> warp_affine_impl(const MatrixView<const T>& img, const Affine& m, Index rows, Index cols,
                                 Interp interp, Border border, double border_value) {
  check_interp("warp_affine", interp);
  if (interp == Interp::area)
    throw std::invalid_argument("devmat: warp_affine: Interp::area is not a warp interpolation (use linear)");
  if (border != Border::constant && border != Border::replicate)
    throw std::invalid_argument("devmat: warp_affine: unknown Border " + std::to_string(static_cast<int>(border)));
  if (!std::isfinite(border_value))
    throw std::invalid_argument("devmat: warp_affine: the border value must be finite");
  for (double v : m)
    if (!std::isfinite(v)) throw std::invalid_argument("devmat: warp_affine: the matrix has a value that is not finite");
  check_out_size("warp_affine", "(image and output size): an empty image has nothing to warp", img.rows(), img.cols(),
                 rows, cols);
  // OpenCV's inverse of the 2x2 part and the shift, in this order (imgwarp.cpp).
  double im[6] = {m[0], m[1], m[2], m[3], m[4], m[5]};
  double d = im[0] * im[4] - im[1] * im[3];
  if (d == 0.0 || !std::isfinite(1.0 / d))
    throw std::invalid_argument("devmat: warp_affine: the matrix is singular (no inverse map)");
  d = 1.0 / d;
  const double a11 = im[4] * d, a22 = im[0] * d;
  im[0] = a11;
  im[1] *= -d;
  im[3] *= -d;
  im[4] = a22;
  const double b1 = -im[0] * im[2] - im[1] * im[5];
  const double b2 = -im[3] * im[2] - im[4] * im[5];
  im[2] = b1;
  im[5] = b2;
  T cval;
  if constexpr (std::is_same_v<T, std::uint8_t>)
    cval = static_cast<T>(std::lrint(std::fmin(std::fmax(border_value, 0.0), 255.0)));
  else
    cval = static_cast<T>(border_value);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  DeviceMatrix<T> out(rows, cols, s);
  use_on(s, img);
  const bool linear = interp == Interp::linear, rep = border == Border::replicate;
  if (linear && rep) launch_warp<T, true, true>(s.native(), img, im, out.data(), rows, cols, cval);
  else if (linear) launch_warp<T, true, false>(s.native(), img, im, out.data(), rows, cols, cval);
  else if (rep) launch_warp<T, false, true>(s.native(), img, im, out.data(), rows, cols, cval);
  else launch_warp<T, false, false>(s.native(), img, im, out.data(), rows, cols, cval);
  return out;
}

template <class T>
DeviceMatrix<T> flip_impl(const MatrixView<const T>& img, FlipAxis axis) {
  if (axis != FlipAxis::vertical && axis != FlipAxis::horizontal && axis != FlipAxis::both)
    throw std::invalid_argument("devmat: flip: unknown FlipAxis " + std::to_string(static_cast<int>(axis)));
  const Stream s = img.stream();
  const DeviceGuard device(s);
  DeviceMatrix<T> out(img.rows(), img.cols(), s);
  if (img.empty()) return out;
  use_on(s, img);
  launch_geom_map(s.native(), out.data(), img.rows(), img.cols(),
                  Flip<T>{img.data(), img.stride(), img.rows(), img.cols(), axis != FlipAxis::horizontal,
                          axis != FlipAxis::vertical});
  return out;
}

template <class T>
DeviceMatrix<T> rotate90_impl(const MatrixView<const T>& img, int k) {
  const int q = ((k % 4) + 4) % 4;
  if (q == 0) return DeviceMatrix<T>(img);
  if (q == 2) return flip_impl(img, FlipAxis::both);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  DeviceMatrix<T> out(img.cols(), img.rows(), s);
  if (img.empty()) return out;
  use_on(s, img);
  launch_rotate90(s.native(), img.data(), img.stride(), out.data(), img.rows(), img.cols(), q == 1);
  return out;
}

}  // namespace
}  // namespace detail

DeviceMatrix<std::uint8_t> resize(const MatrixView<const std::uint8_t>& img, Index rows, Index cols, Interp interp) {
  return detail::resize_impl(img, rows, cols, interp);
}
DeviceMatrix<float> resize(const MatrixView<const float>& img, Index rows, Index cols, Interp interp) {
  return detail::resize_impl(img, rows, cols, interp);
}

DeviceMatrix<std::uint8_t> warp_affine(const MatrixView<const std::uint8_t>& img, const Affine& m, Index rows,
                                       Index cols, Interp interp, Border border, double border_value) {
  return detail::warp_affine_impl(img, m, rows, cols, interp, border, border_value);
}
DeviceMatrix<float> warp_affine(const MatrixView<const float>& img, const Affine& m, Index rows, Index cols,
                                Interp interp, Border border, double border_value) {
  return detail::warp_affine_impl(img, m, rows, cols, interp, border, border_value);
}

DeviceMatrix<std::uint8_t> flip(const MatrixView<const std::uint8_t>& img, FlipAxis axis) {
  return detail::flip_impl(img, axis);
}
DeviceMatrix<float> flip(const MatrixView<const float>& img, FlipAxis axis) { return detail::flip_impl(img, axis); }

DeviceMatrix<std::uint8_t> rotate90(const MatrixView<const std::uint8_t>& img, int k) {
  return detail::rotate90_impl(img, k);
}
DeviceMatrix<float> rotate90(const MatrixView<const float>& img, int k) { return detail::rotate90_impl(img, k); }

}  // namespace devmat
