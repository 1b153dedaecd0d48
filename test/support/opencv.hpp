// OpenCV, the oracle of the image tests (OpenCV 4's core and imgproc on the CPU). Tests that
// link devmat_opencv (test/CMakeLists.txt) are compiled with DEVMAT_TEST_HAVE_OPENCV=1; without
// it their OpenCV cases are one case that reports itself skipped, saying why
// (DEVMAT_OPENCV_MISSING_CASE), and the cases that need no oracle (errors) still run.
#pragma once

#include "support/util.hpp"

#if DEVMAT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cstring>
#include <type_traits>

namespace devmat::test {

template <class T>
constexpr int cv_depth() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return CV_8U;
  else if constexpr (std::is_same_v<T, float>) return CV_32F;
  else if constexpr (std::is_same_v<T, std::int32_t>) return CV_32S;
  else {
    static_assert(std::is_same_v<T, double>, "no OpenCV depth for T");
    return CV_64F;
  }
}

/// A copy of `m` as a cv::Mat of `channels` interleaved channels (m.cols() = width * channels).
template <class T>
cv::Mat to_cv(const HostMatrix<T>& m, int channels = 1) {
  cv::Mat out(static_cast<int>(m.rows()), static_cast<int>(m.cols() / channels), CV_MAKETYPE(cv_depth<T>(), channels));
  if (m.size() > 0) std::memcpy(out.data, m.data(), sizeof(T) * static_cast<std::size_t>(m.size()));
  return out;
}

/// A copy of `m` (any number of channels, interleaved) as rows x (cols * channels).
template <class T>
HostMatrix<T> from_cv(const cv::Mat& m) {
  REQUIRE(m.depth() == cv_depth<T>());
  HostMatrix<T> out(m.rows, static_cast<Index>(m.cols) * m.channels());
  for (int r = 0; r < m.rows; ++r)
    if (out.cols() > 0) std::memcpy(out.data() + r * out.cols(), m.ptr<T>(r), sizeof(T) * static_cast<std::size_t>(out.cols()));
  return out;
}

}  // namespace devmat::test

#define DEVMAT_OPENCV_MISSING_CASE(tags)
#else
/// Where the tests were built without OpenCV: one case, reported as skipped with the reason.
#define DEVMAT_OPENCV_MISSING_CASE(tags)                                                               \
  TEST_CASE("the OpenCV oracle is missing: the cases that compare with OpenCV are left out", tags) { \
    DEVMAT_SKIP("built without OpenCV (apt-get install libopencv-core-dev libopencv-imgproc-dev, or " \
                "scripts/pack-opencv-carry on a machine without it)");                              \
  }
#endif
