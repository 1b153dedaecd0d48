// The candidate image kernels behind plain host functions (support/image_next.hpp).
#include "support/image_next.hpp"

#include "dispatch/image_next.cuh"

namespace devmat::test::next {
void box_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols, int k,
            int r) {
  detail::launch_box_u8_next(s, in, ld, out, ld_out, rows, cols, k, r);
}
void morph_u8(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
              Index cols, int k, int r) {
  if (erode) detail::launch_morph_u8_next<true>(s, in, ld, out, ld_out, rows, cols, k, r);
  else detail::launch_morph_u8_next<false>(s, in, ld, out, ld_out, rows, cols, k, r);
}
void threshold_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols,
                  int t, std::uint8_t maxval, int kind) {
  detail::launch_threshold_u8_next(s, in, ld, out, ld_out, rows, cols, t, maxval, kind);
}
void rgb_to_gray_u8(cudaStream_t s, const std::uint8_t* r, Index ld_r, const std::uint8_t* g, Index ld_g,
                    const std::uint8_t* b, Index ld_b, std::uint8_t* out, Index ld_out, Index rows, Index cols) {
  detail::launch_rgb_to_gray_u8_next(s, r, ld_r, g, ld_g, b, ld_b, out, ld_out, rows, cols);
}
void filter2d_5x5(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols, const float* w) {
  detail::launch_filter2d_5x5_next(s, in, ld, out, ld_out, rows, cols, w);
}
}  // namespace devmat::test::next
