// Canny with its hysteresis design forced (src/dispatch/image_canny.cuh's CannyConfig), for
// test_image_canny: every design the benchmark times is checked, not only the one canny() picks.
#pragma once

#include <devmat/device_matrix.hpp>

#include <cstdint>

namespace devmat::test {
/// canny(img, low, high) by connected components (components true; images under 2^32 pixels)
/// or by tile rounds with `rounds_per_check` rounds between two reads of the flag, each tile
/// filled on bit masks (bit_fill) or by shared-memory sweeps, to the end (max_rounds 0) or
/// giving up for the components after max_rounds rounds; the rounds' suppression by tiles in
/// shared memory or (strip_nms) by warps down strips in registers. img not empty.
DeviceMatrix<std::uint8_t> canny_forced(const MatrixView<const std::uint8_t>& img, double low, double high, bool components,
                                        int rounds_per_check = 4, bool bit_fill = true, int max_rounds = 0,
                                        bool strip_nms = false);
/// canny(img, low, high) by the tile rounds on bit planes (CannyConfig::Hysteresis::bits):
/// canny_nms_bits_kernel's warps walking down walk_tiles (1, 2 or 4) tiles, `rounds_per_check`
/// rounds between two reads of the flag, to the end (max_rounds 0) or giving up for the
/// components after max_rounds rounds (ring_union: the ring pieces' components on the planes
/// instead of the pixel components; with ring_unchecked, after exactly max_rounds rounds, 0 for
/// none, the flag never read). img not empty.
DeviceMatrix<std::uint8_t> canny_forced_planes(const MatrixView<const std::uint8_t>& img, double low, double high,
                                               int rounds_per_check = 4, int max_rounds = 0, int walk_tiles = 2,
                                               bool ring_union = false, bool ring_unchecked = false);
}  // namespace devmat::test
