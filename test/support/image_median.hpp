// median_blur with its kernel's form forced (src/dispatch/image_median.cuh), for
// test_image_median_variants: every form the benchmark times is checked, not only the public
// function's.
#pragma once

#include <devmat/device_matrix.hpp>

#include <cstdint>

namespace devmat::test {
/// median_blur(img, k) (k 3, 5 or 7 for u8; 3 or 5 for f32; img not empty) by the kernel with
/// one output a thread per row (form 0), pairs of adjacent rows (form 1) or, f32 5x5 only, 2 x 2
/// blocks (form 2).
DeviceMatrix<std::uint8_t> median_forced(const MatrixView<const std::uint8_t>& img, int k, int form);
DeviceMatrix<float> median_forced(const MatrixView<const float>& img, int k, int form);
}  // namespace devmat::test
