// Host entry points of the candidate image kernels (src/kernels/image_next.cuh, not dispatched
// by the public functions yet), so that test_image_next compiles with the host compiler. Each
// launches on `s` into a caller-allocated output of row stride ld_out; see
// src/dispatch/image_next.cuh for the preconditions.
#pragma once

#include <devmat/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmat::test::next {
/// r: output rows a thread (4, 8 or 16).
void box_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols, int k,
            int r);
void morph_u8(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
              Index cols, int k, int r);
/// kind: 0 binary, 1 binary_inv, 2 trunc, 3 to_zero, 4 to_zero_inv (Threshold's order).
void threshold_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols,
                  int t, std::uint8_t maxval, int kind);
void rgb_to_gray_u8(cudaStream_t s, const std::uint8_t* r, Index ld_r, const std::uint8_t* g, Index ld_g,
                    const std::uint8_t* b, Index ld_b, std::uint8_t* out, Index ld_out, Index rows, Index cols);
/// w: 25 row-major host weights.
void filter2d_5x5(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols, const float* w);
}  // namespace devmat::test::next
