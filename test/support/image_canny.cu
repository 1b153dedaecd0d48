// support/image_canny.hpp's forced Canny configurations.
#include "support/image_canny.hpp"

#include "dispatch/image_canny.cuh"

#include <cmath>

namespace devmat::test {
DeviceMatrix<std::uint8_t> canny_forced(const MatrixView<const std::uint8_t>& img, double low, double high,
                                        int rounds_per_check, int max_rounds, int walk_tiles, bool ring_unchecked) {
  const Stream s = img.stream();
  DeviceMatrix<std::uint8_t> out(img.rows(), img.cols(), s);
  detail::CannyConfig config;
  config.rounds_per_check = rounds_per_check;
  config.max_rounds = max_rounds;
  config.walk_tiles = walk_tiles;
  config.ring_unchecked = ring_unchecked;
  detail::launch_canny(s, img.data(), img.stride(), out.data(), img.rows(), img.cols(), static_cast<int>(std::floor(low)),
                       static_cast<int>(std::floor(high)), config);
  return out;
}
}  // namespace devmat::test
