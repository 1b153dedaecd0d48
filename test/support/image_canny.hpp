// Canny with its hysteresis forced (src/dispatch/image_canny.cuh's CannyConfig), for
// test_image_canny: every configuration the benchmark times is checked, not only canny()'s.
#pragma once

#include <devmat/device_matrix.hpp>

#include <cstdint>

namespace devmat::test {
/// canny(img, low, high) with `rounds_per_check` rounds between two reads of the flag, up to
/// max_rounds rounds (0: no limit, rounds until nothing changes) before the ring pieces'
/// components, canny_nms_bits_kernel's warps walking down walk_tiles (1 or 2) tiles; with
/// ring_unchecked, exactly max_rounds rounds (0: none) then the components behind the last
/// round's flag, never read by the host.
DeviceMatrix<std::uint8_t> canny_forced(const MatrixView<const std::uint8_t>& img, double low, double high,
                                        int rounds_per_check = 4, int max_rounds = 0, int walk_tiles = 1,
                                        bool ring_unchecked = false);
}  // namespace devmat::test
