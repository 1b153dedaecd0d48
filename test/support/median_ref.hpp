// The median of each k x k window, borders replicated (OpenCV's medianBlur), by selection: the
// reference of test_image_median_variants (GPU) and test_image_median_emulation (host).
#pragma once

#include <algorithm>
#include <vector>

namespace devmat::test {

/// The median of the k x k window around (y, x) of the rows x cols image at img (row stride ld).
template <class T>
T median_reference_at(const T* img, long long rows, long long cols, long long ld, int k, long long y, long long x) {
  std::vector<T> window;
  window.reserve(static_cast<std::size_t>(k * k));
  for (long long i = -k / 2; i <= k / 2; ++i)
    for (long long j = -k / 2; j <= k / 2; ++j)
      window.push_back(img[std::clamp<long long>(y + i, 0, rows - 1) * ld + std::clamp<long long>(x + j, 0, cols - 1)]);
  std::nth_element(window.begin(), window.begin() + window.size() / 2, window.end());
  return window[window.size() / 2];
}

}  // namespace devmat::test
