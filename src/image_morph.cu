// Erosion, dilation, opening and closing by a rectangular element (all ones, any size), u8 and
// f32. Separable: a pass along columns and one along rows, each by van Herk / Gil-Werman
// (kernels/image_morph.cuh), so the cost per pixel does not grow with the element. As OpenCV's
// erode/dilate with their defaults: anchor at the element's centre (rows / 2, cols / 2), pixels
// outside the image ignored (BORDER_CONSTANT with morphologyDefaultBorderValue()), one
// iteration. A view is an image of its own (its edges are the borders, as the other filters;
// OpenCV's BORDER_ISOLATED). Elements with sides 3 or 5 run as one fused pass (rows and columns
// together, 4 pixels a thread; 5 x 5 on the doubling kernel below: morph_fused); other
// elements up to about 100 x 100 (u8; float 55 x 55) as one kernel that runs both passes on a
// tile in shared memory (morph_tile_kernel: the image read once, written once); larger ones as
// two passes through a workspace. For float, a streaming kernel (morph_stream_kernel, elements
// up to 32 x 129 past 5 x 5) takes over from the tile; for
// u8 from 17 x 17 (dispatch/image_morph.cuh's morph_stream_default says where each wins). Float
// elements of up to 16 rows, and u8 ones of 7 to 16 rows and at least 7 columns (and 5 x 5), take
// its twin whose row pass doubles windows instead (morph_stream_doubling_kernel: log2 of the
// width in steps, each a load, an op and a store a row; morph_stream_doubles). Both run their
// instance for exactly the element's rows (odd heights; and u8's square elements, float's from
// 25 x 25, their instance for exactly k x k: morph_stream_exact).
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/image_morph.cuh"
#include "dispatch/workspace.hpp"

#include <devmat/image.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

namespace devmat {
namespace detail {
namespace {

void check_element(const char* op, Index rows, Index cols, int ksize_rows, int ksize_cols) {
  if (ksize_rows < 1 || ksize_cols < 1)
    throw_shape_error(op, rows, cols, ksize_rows, ksize_cols,
                      "(image and structuring element): the element needs at least one row and one column");
}

template <class T, bool kErode>
DeviceMatrix<T> morph(const char* op, const MatrixView<const T>& img, int ksize_rows, int ksize_cols) {
  check_element(op, img.rows(), img.cols(), ksize_rows, ksize_cols);
  if (img.empty()) return DeviceMatrix<T>(img.rows(), img.cols(), img.stream());
  check_grid_x(op, img.rows(), img.cols(), kMorphAcross);
  const Stream s = img.stream();
  const DeviceGuard device(s);
  const Index rows = img.rows(), cols = img.cols();
  DeviceMatrix<T> out(rows, cols, s);
  use_on(s, img);
  if (morph_fused<T>(img.data(), img.stride(), cols, ksize_rows, ksize_cols)) {
    launch_morph_small<kErode>(s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_rows, ksize_cols);
  } else if (ksize_rows == 1 && ksize_cols == 1) {
    copy_rows(out.data(), cols, img.data(), img.stride(), rows, cols, s);
  } else if (morph_stream_default<T>(img.data(), img.stride(), cols, ksize_rows, ksize_cols)) {
    const auto stream = [&](auto prefetch) {
      launch_morph_stream<kErode, decltype(prefetch)::value>(
          s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_rows, ksize_cols, kMorphStreamSegment,
          morph_stream_doubles<T>(ksize_rows, ksize_cols), morph_stream_exact<T>(ksize_rows));
    };
    if constexpr (std::is_same_v<T, float>) {
      if (morph_stream_prefetch<T>(ksize_rows)) stream(std::true_type{});
      else stream(std::false_type{});
    } else {
      stream(std::false_type{});
    }
  } else if (morph_tile_fits<T>(ksize_rows, ksize_cols)) {
    launch_morph_tile<kErode>(s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_rows, ksize_cols);
  } else if (ksize_rows == 1) {
    launch_morph_pass<T, kErode, true>(s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_cols);
  } else if (ksize_cols == 1) {
    launch_morph_pass<T, kErode, false>(s.native(), img.data(), img.stride(), out.data(), cols, rows, cols, ksize_rows);
  } else {
    const auto tmp = Workspace::of<T>(static_cast<std::size_t>(img.size()), s);  // the row pass's output
    launch_morph_pass<T, kErode, true>(s.native(), img.data(), img.stride(), tmp.template as<T>(), cols, rows, cols, ksize_cols);
    launch_morph_pass<T, kErode, false>(s.native(), tmp.template as<const T>(), cols, out.data(), cols, rows, cols, ksize_rows);
  }
  return out;  // tmp is freed stream-ordered, after the kernels
}

}  // namespace
}  // namespace detail

Image8 erode(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols) {
  return detail::morph<std::uint8_t, true>("erode", img, ksize_rows, ksize_cols);
}
DeviceMatrix<float> erode(const MatrixView<const float>& img, int ksize_rows, int ksize_cols) {
  return detail::morph<float, true>("erode", img, ksize_rows, ksize_cols);
}
Image8 dilate(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols) {
  return detail::morph<std::uint8_t, false>("dilate", img, ksize_rows, ksize_cols);
}
DeviceMatrix<float> dilate(const MatrixView<const float>& img, int ksize_rows, int ksize_cols) {
  return detail::morph<float, false>("dilate", img, ksize_rows, ksize_cols);
}

Image8 morphology_open(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols) {
  detail::check_element("morphology_open", img.rows(), img.cols(), ksize_rows, ksize_cols);
  return dilate(erode(img, ksize_rows, ksize_cols), ksize_rows, ksize_cols);
}
DeviceMatrix<float> morphology_open(const MatrixView<const float>& img, int ksize_rows, int ksize_cols) {
  detail::check_element("morphology_open", img.rows(), img.cols(), ksize_rows, ksize_cols);
  return dilate(erode(img, ksize_rows, ksize_cols), ksize_rows, ksize_cols);
}
Image8 morphology_close(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols) {
  detail::check_element("morphology_close", img.rows(), img.cols(), ksize_rows, ksize_cols);
  return erode(dilate(img, ksize_rows, ksize_cols), ksize_rows, ksize_cols);
}
DeviceMatrix<float> morphology_close(const MatrixView<const float>& img, int ksize_rows, int ksize_cols) {
  detail::check_element("morphology_close", img.rows(), img.cols(), ksize_rows, ksize_cols);
  return erode(dilate(img, ksize_rows, ksize_cols), ksize_rows, ksize_cols);
}

}  // namespace devmat
