// Intensity: histogram, equalize_hist, threshold (with Otsu's threshold computed on the device)
// and otsu_threshold, exact against OpenCV 4 (kernels/image_intensity.cuh). Each checks its
// arguments before any launch and runs on the image's stream; only otsu_threshold blocks.
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "dispatch/image_geometry.cuh"
#include "dispatch/workspace.hpp"
#include "kernels/image_intensity.cuh"

#include <devmat/image.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace devmat {
namespace detail {
namespace {

void check_pixels(const char* op, const MatrixView<const std::uint8_t>& img) {
  if (img.rows() > 0 && img.cols() > INT_MAX / img.rows())
    throw shape_error(std::string("devmat: ") + op + ": image " + shape_string(img.rows(), img.cols()) +
                      " has 2^31 pixels or more (the counts are int32)");
}

/// hist (256 counts of C on `s`: histogram_kernel) = the histogram of img; hist is zeroed first.
template <class C>
void launch_histogram(const Stream& s, const MatrixView<const std::uint8_t>& img, C* hist) {
  DEVMAT_CUDA_TRY(cudaMemsetAsync(hist, 0, kHistBins * sizeof(C), s.native()));
  if (img.empty()) return;
  const bool contiguous = img.contiguous();
  const Index n = img.rows() * img.cols();
  // Contiguous: enough 256-thread blocks for 64 bytes a thread, at most 8 per SM's worth (a
  // block's shared copies are flushed once); strided: a block per row (or per kHistSegment
  // pixels of one) up to the same cap.
  const unsigned long long segs = ceil_div(static_cast<unsigned long long>(img.cols()), kHistSegment);
  const unsigned long long want = contiguous ? ceil_div(static_cast<unsigned long long>(n), 64ull * kHistThreads)
                                             : static_cast<unsigned long long>(img.rows()) * segs;
  const unsigned blocks = static_cast<unsigned>(std::clamp<unsigned long long>(want, 1, 1056));
  launch(&histogram_kernel<C>, dim3(blocks), dim3(kHistThreads), 0, s.native(), img.data(), img.stride(), img.rows(),
         img.cols(), contiguous, static_cast<Index>(kHistSegment), hist);
}

/// equalize_hist's and Otsu's counts: 64 bits, so that any image has them (OpenCV's int counts
/// stop at 2^31 pixels; below, the same numbers).
using Count64 = unsigned long long;

/// Device scratch for Otsu: the 256 counts, then the level otsu_kernel writes.
struct OtsuScratch {
  Workspace ws;
  explicit OtsuScratch(const Stream& s) : ws(Workspace::of<Count64>(kHistBins + 1, s)) {}
  Count64* hist() const { return ws.as<Count64>(); }
  int* level() const { return reinterpret_cast<int*>(ws.as<Count64>() + kHistBins); }
};

/// Otsu's level of img into scratch.level(), on `s`.
void launch_otsu(const Stream& s, const MatrixView<const std::uint8_t>& img, const OtsuScratch& scratch) {
  launch_histogram(s, img, scratch.hist());
  launch(&otsu_kernel<Count64>, dim3(1), dim3(32), 0, s.native(), static_cast<const Count64*>(scratch.hist()),
         static_cast<long long>(img.rows() * img.cols()), scratch.level());
}

}  // namespace
}  // namespace detail

DeviceMatrix<std::int32_t> histogram(const MatrixView<const std::uint8_t>& img) {
  detail::check_pixels("histogram", img);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<std::int32_t> out(1, detail::kHistBins, s);
  detail::use_on(s, img);
  detail::launch_histogram(s, img, out.data());
  return out;
}

DeviceMatrix<std::uint8_t> equalize_hist(const MatrixView<const std::uint8_t>& img) {
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<std::uint8_t> out(img.rows(), img.cols(), s);
  if (img.empty()) return out;
  const auto hist = detail::Workspace::of<detail::Count64>(detail::kHistBins, s);
  const auto lut = detail::Workspace::of<std::uint8_t>(detail::kHistBins, s);
  detail::use_on(s, img);
  detail::launch_histogram(s, img, hist.as<detail::Count64>());
  detail::launch(&detail::equalize_lut_kernel<detail::Count64>, dim3(1), dim3(32), 0, s.native(),
                 hist.as<const detail::Count64>(), static_cast<long long>(img.rows() * img.cols()),
                 lut.as<std::uint8_t>());
  detail::launch_geom_map(s.native(), out.data(), img.rows(), img.cols(),
                          detail::LookupU8{img.data(), img.stride(), lut.as<const std::uint8_t>()});
  return out;  // hist and lut are freed stream-ordered, after the kernels
}

namespace detail {
namespace {

void check_threshold_args(Threshold type, double t, double maxval) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) > static_cast<int>(Threshold::otsu))
    throw std::invalid_argument("devmat: threshold: unknown Threshold " + std::to_string(static_cast<int>(type)));
  if (!std::isfinite(t) || !std::isfinite(maxval))
    throw std::invalid_argument("devmat: threshold: the threshold and maxval must be finite");
}

}  // namespace
}  // namespace detail

DeviceMatrix<std::uint8_t> threshold(const MatrixView<const std::uint8_t>& img, double t, double maxval,
                                     Threshold type) {
  detail::check_threshold_args(type, t, maxval);
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<std::uint8_t> out(img.rows(), img.cols(), s);
  if (img.empty()) return out;
  // OpenCV: the threshold floored (any value below 0 or from 255 up acts as -1 or 255), maxval
  // rounded to nearest even and saturated.
  const int ithresh = static_cast<int>(std::clamp(std::floor(t), -1.0, 255.0));
  const auto imax = static_cast<std::uint8_t>(std::clamp(std::nearbyint(maxval), 0.0, 255.0));
  std::optional<detail::OtsuScratch> otsu;
  detail::use_on(s, img);
  if (type == Threshold::otsu) {
    otsu.emplace(s);
    detail::launch_otsu(s, img, *otsu);
  }
  const int kind = type == Threshold::otsu ? detail::kThBinary : static_cast<int>(type);
  detail::StreamArgs<1> a{};
  a.in[0] = img.data();
  a.ld[0] = img.stride();
  const detail::ThresholdWord f{ithresh, static_cast<unsigned>(imax) * 0x01010101u, kind,
                                otsu ? static_cast<const int*>(otsu->level()) : nullptr, 0u};
  // A dense, aligned image (the whole of a matrix) streams as one row of uint4s; a view goes row by row.
  if (detail::stream_flat_ok(a, out.data(), img.cols(), img.rows(), img.cols()))
    detail::launch_stream_flat(s.native(), a, out.data(), img.rows() * img.cols(), f);
  else
    detail::launch_stream_u8(s.native(), a, out.data(), img.cols(), img.rows(), img.cols(), f);
  return out;
}

DeviceMatrix<float> threshold(const MatrixView<const float>& img, double t, double maxval, Threshold type) {
  detail::check_threshold_args(type, t, maxval);
  if (type == Threshold::otsu)
    throw std::invalid_argument("devmat: threshold: Threshold::otsu needs a u8 image (as OpenCV's THRESH_OTSU)");
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  DeviceMatrix<float> out(img.rows(), img.cols(), s);
  if (img.empty()) return out;
  detail::use_on(s, img);
  detail::StreamArgs<1> a{};
  a.in[0] = reinterpret_cast<const std::uint8_t*>(img.data());
  a.ld[0] = img.stride();
  if (detail::stream_flat_ok(a, out.data(), img.cols(), img.rows(), img.cols()))
    detail::launch_stream_flat(s.native(), a, out.data(), img.rows() * img.cols(),
                               detail::ThresholdF32Word{static_cast<float>(t), static_cast<float>(maxval),
                                                        static_cast<int>(type)});
  else
    detail::launch_geom_map(s.native(), out.data(), img.rows(), img.cols(),
                            detail::ThresholdF32{img.data(), img.stride(), static_cast<float>(t),
                                                 static_cast<float>(maxval), static_cast<int>(type)});
  return out;
}

double otsu_threshold(const MatrixView<const std::uint8_t>& img) {
  if (img.empty()) return 0.0;
  const Stream s = img.stream();
  const detail::DeviceGuard device(s);
  const detail::OtsuScratch scratch(s);
  detail::use_on(s, img);
  detail::launch_otsu(s, img, scratch);
  int t = 0;
  DEVMAT_CUDA_TRY(cudaMemcpyAsync(&t, scratch.level(), sizeof(int), cudaMemcpyDeviceToHost, s.native()));
  DEVMAT_CUDA_TRY(cudaStreamSynchronize(s.native()));
  return static_cast<double>(t);
}

}  // namespace devmat
