// Colour: channel split/merge and cvtColor's RGB <-> gray, HSV, YCrCb on planes, u8 and f32, as
// OpenCV 4 computes them (kernels/image_color.cuh). Each checks that its planes share one shape
// before any launch, runs on the first plane's stream and returns new matrices.
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/common.hpp"
#include "dispatch/image_geometry.cuh"
#include "dispatch/launch.cuh"
#include "kernels/image_color.cuh"

#include <devmat/image.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <utility>
#include <vector>

namespace devmat {
namespace detail {
namespace {

template <class T, int NI, int NO, class In, class Out, class F>
void launch_color(cudaStream_t s, const In& in, const Out& out, Index rows, Index cols, F f) {
  if (rows == 0 || cols == 0) return;
  const auto bx = ceil_div(static_cast<unsigned long long>(cols), kColorThreadsX);
  const auto by = std::min<unsigned long long>(ceil_div(static_cast<unsigned long long>(rows), kColorThreadsY), 65535);
  if (bx > static_cast<unsigned long long>(INT_MAX))
    throw shape_error("devmat: image of " + shape_string(rows, cols) + " is too wide");
  launch(&color_kernel<T, NI, NO, In, Out, F>, dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by)),
         dim3(kColorThreadsX, kColorThreadsY), 0, s, in, out, rows, cols, f);
}

template <class T>
void check_same_shape(const char* op, const MatrixView<const T>& a, const MatrixView<const T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw_shape_error(op, a.rows(), a.cols(), b.rows(), b.cols(), "(two planes): the planes must have one shape");
}

template <class T, int N>
PlanesIn<T, N> planes_in(const std::array<const MatrixView<const T>*, N>& v) {
  PlanesIn<T, N> p{};
  for (int k = 0; k < N; ++k) {
    p.p[k] = v[k]->data();
    p.ld[k] = v[k]->stride();
  }
  return p;
}

/// Three planes in, NO planes out: f over every pixel, on the first plane's stream.
template <class T, int NO, class F>
std::array<DeviceMatrix<T>, NO> convert3(const char* op, const MatrixView<const T>& a, const MatrixView<const T>& b,
                                         const MatrixView<const T>& c, F f) {
  check_same_shape(op, a, b);
  check_same_shape(op, a, c);
  const Stream s = a.stream();
  const DeviceGuard device(s);
  std::array<DeviceMatrix<T>, NO> out;
  PlanesOut<T, NO> po{};
  po.cols = a.cols();
  for (int k = 0; k < NO; ++k) {
    out[k] = DeviceMatrix<T>(a.rows(), a.cols(), s);
    po.p[k] = out[k].data();
  }
  if (a.empty()) return out;
  use_on(s, a, b, c);
  launch_color<T, 3, NO>(s.native(), planes_in<T, 3>({&a, &b, &c}), po, a.rows(), a.cols(), f);
  return out;
}

template <class T, int N>
std::vector<DeviceMatrix<T>> split_n(const MatrixView<const T>& in, Index cols) {
  const Stream s = in.stream();
  const DeviceGuard device(s);
  std::vector<DeviceMatrix<T>> out;
  PlanesOut<T, N> po{};
  po.cols = cols;
  for (int k = 0; k < N; ++k) {
    out.emplace_back(in.rows(), cols, s);
    po.p[k] = out.back().data();
  }
  if (in.empty()) return out;
  use_on(s, in);
  launch_color<T, N, N>(s.native(), InterleavedIn<T, N>{in.data(), in.stride()}, po, in.rows(), cols,
                        CopyChannels<T, N>{});
  return out;
}

template <class T>
std::vector<DeviceMatrix<T>> split_impl(const MatrixView<const T>& in, int channels) {
  if (channels < 1 || channels > 4 || in.cols() % channels != 0)
    throw_shape_error("split_channels", in.rows(), in.cols(), channels, 1,
                      "(image and channels): channels must be 1 to 4 and divide the width");
  const Index cols = in.cols() / channels;
  switch (channels) {
    case 1: return split_n<T, 1>(in, cols);
    case 2: return split_n<T, 2>(in, cols);
    case 3: return split_n<T, 3>(in, cols);
    default: return split_n<T, 4>(in, cols);
  }
}

template <class T, int N>
DeviceMatrix<T> merge_n(const std::vector<MatrixView<const T>>& planes) {
  const MatrixView<const T>& a = planes[0];
  const Stream s = a.stream();
  const DeviceGuard device(s);
  DeviceMatrix<T> out(a.rows(), a.cols() * N, s);
  if (a.empty()) return out;
  std::array<const MatrixView<const T>*, N> v{};
  for (int k = 0; k < N; ++k) {
    v[k] = &planes[k];
    use_on(s, planes[k]);
  }
  launch_color<T, N, N>(s.native(), planes_in<T, N>(v), InterleavedOut<T, N>{out.data(), a.cols()}, a.rows(), a.cols(),
                        CopyChannels<T, N>{});
  return out;
}

template <class T>
DeviceMatrix<T> merge_impl(const std::vector<MatrixView<const T>>& planes) {
  if (planes.empty() || planes.size() > 4)
    throw_shape_error("merge_channels", static_cast<Index>(planes.size()), 1, 4, 1,
                      "(planes and the most allowed): 1 to 4 planes");
  for (const auto& p : planes) check_same_shape("merge_channels", planes[0], p);
  switch (planes.size()) {
    case 1: return merge_n<T, 1>(planes);
    case 2: return merge_n<T, 2>(planes);
    case 3: return merge_n<T, 3>(planes);
    default: return merge_n<T, 4>(planes);
  }
}

template <class T>
std::array<DeviceMatrix<T>, 3> gray_to_rgb_impl(const MatrixView<const T>& g) {
  const Stream s = g.stream();
  const DeviceGuard device(s);
  std::array<DeviceMatrix<T>, 3> out;
  PlanesOut<T, 3> po{};
  po.cols = g.cols();
  for (int k = 0; k < 3; ++k) {
    out[k] = DeviceMatrix<T>(g.rows(), g.cols(), s);
    po.p[k] = out[k].data();
  }
  if (g.empty()) return out;
  use_on(s, g);
  launch_color<T, 1, 3>(s.native(), PlanesIn<T, 1>{{g.data()}, {g.stride()}}, po, g.rows(), g.cols(), GrayToRgb<T>{});
  return out;
}

}  // namespace
}  // namespace detail

std::vector<DeviceMatrix<std::uint8_t>> split_channels(const MatrixView<const std::uint8_t>& in, int channels) {
  return detail::split_impl(in, channels);
}
std::vector<DeviceMatrix<float>> split_channels(const MatrixView<const float>& in, int channels) {
  return detail::split_impl(in, channels);
}
DeviceMatrix<std::uint8_t> merge_channels(const std::vector<MatrixView<const std::uint8_t>>& planes) {
  return detail::merge_impl(planes);
}
DeviceMatrix<float> merge_channels(const std::vector<MatrixView<const float>>& planes) {
  return detail::merge_impl(planes);
}

DeviceMatrix<std::uint8_t> rgb_to_gray(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                                       const MatrixView<const std::uint8_t>& b) {
  detail::check_same_shape("rgb_to_gray", r, g);
  detail::check_same_shape("rgb_to_gray", r, b);
  const Stream s = r.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<std::uint8_t> out(r.rows(), r.cols(), s);
  if (r.empty()) return out;
  detail::use_on(s, r, g, b);
  // 16 pixels a thread, 4 at once in a word (GrayWord).
  detail::StreamArgs<3> a{};
  const std::array<const MatrixView<const std::uint8_t>*, 3> planes = {&r, &g, &b};
  for (int k = 0; k < 3; ++k) {
    a.in[k] = planes[k]->data();
    a.ld[k] = planes[k]->stride();
  }
  detail::launch_stream_u8(s.native(), a, out.data(), r.cols(), r.rows(), r.cols(), detail::GrayWord{});
  return out;
}
DeviceMatrix<float> rgb_to_gray(const MatrixView<const float>& r, const MatrixView<const float>& g,
                                const MatrixView<const float>& b) {
  return std::move(detail::convert3<float, 1>("rgb_to_gray", r, g, b, detail::RgbToGray<float>{})[0]);
}

Rgb8 gray_to_rgb(const MatrixView<const std::uint8_t>& gray) { return detail::gray_to_rgb_impl(gray); }
RgbF gray_to_rgb(const MatrixView<const float>& gray) { return detail::gray_to_rgb_impl(gray); }

Rgb8 rgb_to_hsv(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                const MatrixView<const std::uint8_t>& b) {
  return detail::convert3<std::uint8_t, 3>("rgb_to_hsv", r, g, b, detail::RgbToHsv<std::uint8_t>{});
}
RgbF rgb_to_hsv(const MatrixView<const float>& r, const MatrixView<const float>& g, const MatrixView<const float>& b) {
  return detail::convert3<float, 3>("rgb_to_hsv", r, g, b, detail::RgbToHsv<float>{});
}
Rgb8 hsv_to_rgb(const MatrixView<const std::uint8_t>& h, const MatrixView<const std::uint8_t>& s,
                const MatrixView<const std::uint8_t>& v) {
  return detail::convert3<std::uint8_t, 3>("hsv_to_rgb", h, s, v, detail::HsvToRgb<std::uint8_t>{});
}
RgbF hsv_to_rgb(const MatrixView<const float>& h, const MatrixView<const float>& s, const MatrixView<const float>& v) {
  return detail::convert3<float, 3>("hsv_to_rgb", h, s, v, detail::HsvToRgb<float>{});
}
Rgb8 rgb_to_ycrcb(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                  const MatrixView<const std::uint8_t>& b) {
  return detail::convert3<std::uint8_t, 3>("rgb_to_ycrcb", r, g, b, detail::RgbToYCrCb<std::uint8_t>{});
}
RgbF rgb_to_ycrcb(const MatrixView<const float>& r, const MatrixView<const float>& g, const MatrixView<const float>& b) {
  return detail::convert3<float, 3>("rgb_to_ycrcb", r, g, b, detail::RgbToYCrCb<float>{});
}
Rgb8 ycrcb_to_rgb(const MatrixView<const std::uint8_t>& y, const MatrixView<const std::uint8_t>& cr,
                  const MatrixView<const std::uint8_t>& cb) {
  return detail::convert3<std::uint8_t, 3>("ycrcb_to_rgb", y, cr, cb, detail::YCrCbToRgb<std::uint8_t>{});
}
RgbF ycrcb_to_rgb(const MatrixView<const float>& y, const MatrixView<const float>& cr, const MatrixView<const float>& cb) {
  return detail::convert3<float, 3>("ycrcb_to_rgb", y, cr, cb, detail::YCrCbToRgb<float>{});
}

}  // namespace devmat
