// Host entry points of the image kernels that test_image_small compares: the fused/streaming
// paths of the small u8 box and morphology (each configuration the benchmark times, not only the
// one the public functions pick) and the general two-pass / any-size paths they replaced for
// those sizes, which serve as the GPU oracle. Each launches on `s` into a caller-allocated
// output of row stride ld_out; preconditions as in src/dispatch/image_neigh.cuh,
// image_morph.cuh and filter.cuh.
#pragma once

#include <devmat/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmat::test::small {
/// The fused u8 box mean, sides 3 or 5; band: the 16-pixel banded kernel, else the 4-pixel one;
/// r: output rows a thread (4, 8 or 16), 0: the public function's choice (band ignored).
void box_u8(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows, Index cols, int kr,
            int kc, bool band, int r);
/// The sliding fused u8 box mean (box_u8_slide_kernel), sides 3 or 5, r output rows a thread (4, 8
/// or 16), `words` words of 4 pixels a thread (1 or 2).
void box_u8_slide(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int r, int words = 1);
/// The 16-pixel sliding u8 box mean (box_u8_vec16_kernel), sides 3 or 5, r output rows a thread
/// (4, 8 or 16), min_blocks its kMinBlocks (1 or 6).
void box_u8_vec16(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int r, int min_blocks = 1);
/// The general path: a row pass and a column pass through a uint16 workspace.
void box_u8_two_pass(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
                     Index cols, int kr, int kc);
/// The fused erosion / dilation (u8 or float), sides 3 or 5 (float also 7 x 7 and 9 x 9); r as
/// box_u8. std::logic_error for other sides.
void morph(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out, Index rows,
           Index cols, int kr, int kc, int r);
void morph(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
           int kr, int kc, int r);
/// The general path: van Herk / Gil-Werman along rows, then along columns.
void morph_two_pass(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                    Index rows, Index cols, int kr, int kc);
void morph_two_pass(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows,
                    Index cols, int kr, int kc);
/// Both van Herk / Gil-Werman passes on a tile in shared memory (any kr, kc >= 1 whose tile fits
/// the device), tile shape `shape` (u8 0 .. 1, float 0 .. 2: kernels/image_morph.cuh's morph_tile_shape),
/// `batch` words loaded at a time by the block minima (1 or 4).
void morph_tile(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                Index rows, Index cols, int kr, int kc, int shape, int batch = 1);
void morph_tile(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                int kr, int kc, int shape, int batch = 1);
/// One kernel streaming down strips (morph_stream_kernel, or `doubling` morph_stream_doubling_kernel:
/// any kr <= 32, kc <= 129 float, 513 u8), `seg` output rows a block (0: the launcher's choice),
/// `exact` the instance (detail::MorphStreamExact: 0 kr and kc at run time, 1 exact rows, 2 exact
/// rows and columns), `prefetch` its L2 prefetch of the block of rows after next (kPrefetch).
/// std::invalid_argument for other elements.
void morph_stream(bool erode, cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index ld_out,
                  Index rows, Index cols, int kr, int kc, int seg = 0, bool doubling = false, int exact = 0,
                  bool prefetch = false);
void morph_stream(bool erode, cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows,
                  Index cols, int kr, int kc, int seg = 0, bool doubling = false, int exact = 0, bool prefetch = false);
/// The register-blocked filter2d (k = 3, 5, 7), device weights w (k x k, row-major).
void filter2d_small(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                    const float* w, int k);
/// The filter2d kernel without shared memory (k = 3, 5), r output rows a thread (4, 8 or 16).
void filter2d_direct(cudaStream_t s, const float* in, Index ld, float* out, Index ld_out, Index rows, Index cols,
                     const float* w, int k, int r);
/// The general filter2d kernel (any odd size), dense output (ld_out = cols).
void filter2d_general(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, const float* w, int kh,
                      int kw);
/// resize's INTER_AREA shrink (output no larger than the source along either axis) of `in`
/// (src_rows x src_cols, row stride ld) into `out` (rows x cols, dense), scales as resize takes
/// them; table: resize_area_tab_kernel, else geom_map_kernel over ResizeArea (the two kernels
/// src/dispatch/image_geometry.cuh's kResizeAreaTable chooses between).
void resize_area(cudaStream_t s, const std::uint8_t* in, Index ld, Index src_rows, Index src_cols, std::uint8_t* out,
                 Index rows, Index cols, bool table);
void resize_area(cudaStream_t s, const float* in, Index ld, Index src_rows, Index src_cols, float* out, Index rows,
                 Index cols, bool table);
/// resize's halving kernel (2x2 means) of `in` (2 rows x 2 cols, row stride ld) into `out` (rows x
/// cols, dense); stream_loads: the source read cache-streaming (resize_half_kernel's kStreamLoads).
void resize_half(cudaStream_t s, const std::uint8_t* in, Index ld, std::uint8_t* out, Index rows, Index cols,
                 bool stream_loads);
void resize_half(cudaStream_t s, const float* in, Index ld, float* out, Index rows, Index cols, bool stream_loads);
}  // namespace devmat::test::small
