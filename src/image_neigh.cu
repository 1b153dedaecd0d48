// Neighbourhood operations: box_filter (two separable passes of running sums, borders
// reflected as OpenCV's default BORDER_REFLECT_101) and integral (row scans, then column scans,
// OpenCV's (rows + 1) x (cols + 1) layout). Arguments are checked before any launch; results
// are new matrices on the image's stream. A view is an image of its own (its edges are the
// borders; OpenCV's BORDER_ISOLATED).
#include "detail/runtime.hpp"
#include "dispatch/image_neigh.cuh"
#include "dispatch/workspace.hpp"

#include <devmat/image.hpp>

#include <cstdint>
#include <type_traits>

namespace devmat {
namespace detail {
namespace {

/// Sums of u8 in int (exact), of float in double.
template <class T>
using BoxAcc = std::conditional_t<std::is_same_v<T, std::uint8_t>, int, double>;
/// The row pass's output, read by the column pass: int for u8, float for float.
template <class T>
using BoxTmp = std::conditional_t<std::is_same_v<T, std::uint8_t>, int, float>;

template <class T>
DeviceMatrix<T> box(const MatrixView<const T>& img, int ksize_rows, int ksize_cols, bool normalize) {
  if (ksize_rows < 1 || ksize_cols < 1 || ksize_rows > kMaxBoxSide || ksize_cols > kMaxBoxSide)
    throw_shape_error("box_filter", img.rows(), img.cols(), ksize_rows, ksize_cols,
                      "(image and kernel): the kernel's sides must be from 1 to 255");
  if (img.empty()) return DeviceMatrix<T>(img.rows(), img.cols(), img.stream());
  check_grid_x("box_filter", img.rows(), img.cols(), kBoxAlong);
  const Stream s = img.stream();
  const Index rows = img.rows(), cols = img.cols();
  DeviceMatrix<T> out(rows, cols, s);
  const auto tmp = Workspace::of<BoxTmp<T>>(static_cast<std::size_t>(img.size()), s);
  const int area = normalize ? ksize_rows * ksize_cols : 1;
  const double scale = 1.0 / area;
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
  DeviceMatrix<Acc> out(rows + 1, cols + 1, s);
  use_on(s, img);
  launch_integral<T, Acc>(s.native(), img.data(), img.stride(), out.data(), cols + 1, rows, cols);
  return out;
}

}  // namespace
}  // namespace detail

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
