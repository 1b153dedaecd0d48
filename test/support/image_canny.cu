// support/image_canny.hpp's forced Canny designs.
#include "support/image_canny.hpp"

#include "dispatch/image_canny.cuh"

#include <cmath>

namespace devmat::test {
DeviceMatrix<std::uint8_t> canny_forced(const MatrixView<const std::uint8_t>& img, double low, double high, bool components,
                                        int rounds_per_check, bool bit_fill, int max_rounds, bool strip_nms) {
  const Stream s = img.stream();
  DeviceMatrix<std::uint8_t> out(img.rows(), img.cols(), s);
  detail::CannyConfig config;
  config.hysteresis = components ? detail::CannyConfig::Hysteresis::components : detail::CannyConfig::Hysteresis::tile_rounds;
  config.rounds_per_check = rounds_per_check;
  config.max_rounds = max_rounds;
  config.fill = bit_fill ? detail::CannyConfig::TileFill::bits : detail::CannyConfig::TileFill::sweeps;
  config.nms = strip_nms ? detail::CannyConfig::Nms::strip : detail::CannyConfig::Nms::tile;
  detail::launch_canny(s, img.data(), img.stride(), out.data(), img.rows(), img.cols(), static_cast<int>(std::floor(low)),
                       static_cast<int>(std::floor(high)), config);
  return out;
}
DeviceMatrix<std::uint8_t> canny_forced_planes(const MatrixView<const std::uint8_t>& img, double low, double high,
                                               int rounds_per_check, int max_rounds, int walk_tiles, bool ring_union,
                                               bool ring_unchecked) {
  const Stream s = img.stream();
  DeviceMatrix<std::uint8_t> out(img.rows(), img.cols(), s);
  detail::CannyConfig config;
  config.hysteresis = detail::CannyConfig::Hysteresis::bits;
  config.rounds_per_check = rounds_per_check;
  config.max_rounds = max_rounds;
  config.walk_tiles = walk_tiles;
  config.ring_union = ring_union;
  config.ring_unchecked = ring_unchecked;
  detail::launch_canny(s, img.data(), img.stride(), out.data(), img.rows(), img.cols(), static_cast<int>(std::floor(low)),
                       static_cast<int>(std::floor(high)), config);
  return out;
}
}  // namespace devmat::test
