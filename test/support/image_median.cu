// support/image_median.hpp's forced median kernels.
#include "support/image_median.hpp"

#include "dispatch/image_median.cuh"

#include <stdexcept>
#include <type_traits>

namespace devmat::test {
namespace {
template <class T>
DeviceMatrix<T> forced(const MatrixView<const T>& img, int k, int form) {
  const Stream s = img.stream();
  DeviceMatrix<T> out(img.rows(), img.cols(), s);
  const bool pair = form == 1;
  if (form == 2) {
    if constexpr (std::is_same_v<T, float>)
      if (k == 5) {
        detail::launch_median_f32_quad(s.native(), img.data(), img.stride(), out.data(), img.rows(), img.cols());
        return out;
      }
    throw std::invalid_argument("median_forced: form 2 is f32 5x5 only");
  }
  const auto run = [&](auto side) {
    detail::launch_median<decltype(side)::value>(s.native(), img.data(), img.stride(), out.data(), img.rows(), img.cols(),
                                                 pair);
  };
  switch (k) {
    case 3: run(std::integral_constant<int, 3>{}); break;
    case 5: run(std::integral_constant<int, 5>{}); break;
    case 7:
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        run(std::integral_constant<int, 7>{});
        break;
      }
      [[fallthrough]];
    default: throw std::invalid_argument("median_forced: no such side");
  }
  return out;
}
}  // namespace

DeviceMatrix<std::uint8_t> median_forced(const MatrixView<const std::uint8_t>& img, int k, int form) {
  return forced(img, k, form);
}
DeviceMatrix<float> median_forced(const MatrixView<const float>& img, int k, int form) { return forced(img, k, form); }
}  // namespace devmat::test
