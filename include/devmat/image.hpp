// Images in and out, and image filters. Plain C++.
/// @file
/// Images in and out (load_gray, load_rgb, save_image), image filters (filter2d,
/// gaussian_blur, sobel), geometry (resize, warp_affine, flip, rotate90), colour (channels,
/// rgb_to_gray, HSV, YCrCb), intensity (histogram, equalize_hist, threshold) and
/// neighbourhoods (erode, dilate, morphology_open/close, box_filter, median_blur, integral,
/// canny), each the GPU twin of the OpenCV function named in its comment.
#pragma once

#include <devmat/device_matrix.hpp>
#include <devmat/pinned.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace devmat {

/// An 8-bit gray image: one byte per pixel, row-major, rows() high and cols() wide.
using Image8 = DeviceMatrix<std::uint8_t>;
/// An 8-bit colour image as three planes: R, G, B, each an Image8 of the same shape.
using Rgb8 = std::array<DeviceMatrix<std::uint8_t>, 3>;  // planar R, G, B

/// True when libdevmat was built with image I/O (stb); otherwise the functions below throw io_error.
bool image_io_available() noexcept;

///@{
/// Reads PNG, JPEG, BMP or PGM/PPM as 8-bit gray (colour is converted to luma,
/// 0.299 R + 0.587 G + 0.114 B). The format is recognised by the contents, not the name.
/// Throws io_error naming the file and the reason (missing, empty, not an image, an unsupported
/// format, truncated, corrupt).
/// The image lands on the calling thread's Stream::per_thread(), or on `stream`.
Image8 load_gray(const std::string& path);
Image8 load_gray(const std::string& path, const Stream& stream);
///@}
///@{
/// Reads an image as three planar 8-bit channels (gray images give three equal planes), on
/// the calling thread's Stream::per_thread() or on `stream`; errors as load_gray. The
/// interleaved bytes are uploaded as decoded and split on the device (split_channels).
Rgb8 load_rgb(const std::string& path);
Rgb8 load_rgb(const std::string& path, const Stream& stream);
///@}
///@{
/// Writes PNG (.png) or PGM/PPM (.pgm/.ppm) chosen by the extension; throws io_error for any
/// other extension or a failed write, and writes nothing on failure. Colour saved as .pgm is
/// converted to luma (the weights above); gray saved as .ppm has three equal channels. RGB
/// planes are interleaved on the device (merge_channels) and copied down once; planes of
/// different shapes are a shape_error. Blocks until the file is written.
void save_image(const std::string& path, const MatrixView<const std::uint8_t>& gray);
void save_image(const std::string& path, const Rgb8& rgb);
///@}

// ---------------------------------------------------------------- host side, for pipelines
// load_* and save_image decode or encode and move the pixels in one blocking call. A pipeline
// that keeps the GPU busy decodes on CPU threads into pinned memory, uploads with
// DeviceMatrix::copy_from_host_async on one of several streams, and encodes from pinned memory
// that copy_to_host_async filled (examples/batch_pipeline.cpp): read_image and write_image are
// the file halves of load_* and save_image, with the same formats, checks and errors.

/// The shape of an image in host memory: rows x cols pixels of `channels` interleaved bytes.
struct ImageShape {
  Index rows = 0;    ///< pixel rows (the height)
  Index cols = 0;    ///< pixels a row (the width)
  int channels = 0;  ///< bytes a pixel: 1 (gray) or 3 (R, G, B)
};

/// Decodes `path` (as load_gray for `channels` 1, as load_rgb for 3) into `pixels`: rows x
/// (cols * channels) interleaved bytes, row-major with no padding. `pixels` is resized to the
/// image (it allocates only when it grows: reuse one buffer for many images). Runs on the
/// calling thread with no device work; errors as load_gray, and `channels` other than 1 or 3
/// is std::invalid_argument.
ImageShape read_image(const std::string& path, int channels, PinnedBuffer<std::uint8_t>& pixels);
/// read_image into ordinary host memory (for CPU work: no CUDA involved).
ImageShape read_image(const std::string& path, int channels, std::vector<std::uint8_t>& pixels);

/// Writes rows x cols pixels of `channels` (1 or 3) interleaved bytes at `pixels` (host
/// memory, row-major with no padding) as save_image does, by the extension of `path`.
/// Runs on the calling thread with no device work. A null pointer or `channels` other than 1
/// or 3 is std::invalid_argument; an empty image, a bad extension or a failed write is io_error.
void write_image(const std::string& path, const std::uint8_t* pixels, Index rows, Index cols, int channels);

// The filters read matrices and views alike (a region of interest is a view: `img.block(...)`).
// A view is filtered as an image of its own: its edges are the borders, whatever lies outside
// it in memory (OpenCV's BORDER_ISOLATED).

/// 2D correlation of `img` with a small odd-sized `kernel` (up to 31x31), output of the same
/// size, borders replicated (OpenCV filter2D with BORDER_REPLICATE). Runs on img's stream.
/// A kernel with an even side, a side over 31, or no elements is a shape_error.
DeviceMatrix<float> filter2d(const MatrixView<const float>& img, const MatrixView<const float>& kernel);
/// Separable Gaussian blur with radius ceil(3 sigma), borders replicated. sigma <= 0 (or not
/// finite) is std::invalid_argument.
DeviceMatrix<float> gaussian_blur(const MatrixView<const float>& img, float sigma);
/// Gradient magnitude sqrt(gx^2 + gy^2) of the 3x3 Sobel derivatives, borders replicated.
DeviceMatrix<float> sobel(const MatrixView<const float>& img);

// ---------------------------------------------------------------- geometry
// u8 and f32 images, one channel (a colour image is three planes: apply to each). Each reads a
// matrix or a view (a region of interest) and returns a new matrix on the image's stream; bad
// parameters throw before anything runs. Results are OpenCV 4's: exact for nearest, flip and
// rotate90; u8 interpolation within one grey level (OpenCV mixes fixed-point paths), f32 within
// 1e-5 relative.

/// How resize and warp_affine interpolate (OpenCV's INTER_NEAREST, INTER_LINEAR, INTER_AREA).
enum class Interp {
  nearest,  ///< the source pixel at floor(x * src / dst) (INTER_NEAREST)
  linear,   ///< bilinear, pixel centres aligned (INTER_LINEAR)
  area,     ///< the mean over each output pixel's footprint when shrinking; when enlarging,
            ///< OpenCV's INTER_AREA upscale (bilinear weights snapped to whole pixels)
};

/// What warp_affine reads outside the source (OpenCV's BORDER_CONSTANT, BORDER_REPLICATE).
enum class Border {
  constant,   ///< the border value
  replicate,  ///< the nearest edge pixel
};

/// Which way flip mirrors (OpenCV's flip codes 0, 1 and -1).
enum class FlipAxis {
  vertical,    ///< upside down: row i goes to rows - 1 - i (flipCode 0)
  horizontal,  ///< left to right: column j goes to cols - 1 - j (flipCode 1)
  both,        ///< both at once, a half turn (flipCode -1)
};

///@{
/// `img` resized to rows x cols (cv::resize with dsize = (cols, rows)). An output side below 1,
/// or an empty image with a non-empty output, is a shape_error; an Interp outside the enum is
/// std::invalid_argument.
DeviceMatrix<std::uint8_t> resize(const MatrixView<const std::uint8_t>& img, Index rows, Index cols,
                                  Interp interp = Interp::linear);
DeviceMatrix<float> resize(const MatrixView<const float>& img, Index rows, Index cols, Interp interp = Interp::linear);
///@}

/// A 2x3 affine matrix, row-major: (m[0] m[1] m[2]; m[3] m[4] m[5]).
using Affine = std::array<double, 6>;

///@{
/// cv::warpAffine: output pixel (x, y) (x the column) is the source at M^-1 (x, y), where `m`
/// maps source to output as OpenCV's default (no WARP_INVERSE_MAP), with OpenCV's 1/32-pixel
/// fixed-point coordinates. Outside the source: `border_value` (saturated to u8 for u8 images)
/// or the nearest edge pixel. An output side below 1 or an empty image is a shape_error; a
/// singular or non-finite `m`, Interp::area, or a value outside the enums is
/// std::invalid_argument.
DeviceMatrix<std::uint8_t> warp_affine(const MatrixView<const std::uint8_t>& img, const Affine& m, Index rows,
                                       Index cols, Interp interp = Interp::linear, Border border = Border::constant,
                                       double border_value = 0);
DeviceMatrix<float> warp_affine(const MatrixView<const float>& img, const Affine& m, Index rows, Index cols,
                                Interp interp = Interp::linear, Border border = Border::constant,
                                double border_value = 0);
///@}

///@{
/// `img` mirrored (cv::flip); any shape, empty included.
DeviceMatrix<std::uint8_t> flip(const MatrixView<const std::uint8_t>& img, FlipAxis axis);
DeviceMatrix<float> flip(const MatrixView<const float>& img, FlipAxis axis);
///@}

///@{
/// `img` turned by k quarter turns counter-clockwise (numpy's rot90; any k, taken modulo 4):
/// k = 1 is cv::rotate's ROTATE_90_COUNTERCLOCKWISE, 2 ROTATE_180, 3 ROTATE_90_CLOCKWISE.
/// Odd k gives a cols x rows matrix.
DeviceMatrix<std::uint8_t> rotate90(const MatrixView<const std::uint8_t>& img, int k);
DeviceMatrix<float> rotate90(const MatrixView<const float>& img, int k);
///@}

// ---------------------------------------------------------------- colour
// A colour image is three planes of one shape (Rgb8 for u8, RgbF for f32), in R, G, B order
// (OpenCV's COLOR_RGB2* codes); an interleaved image is a matrix of rows x (cols * channels).
// u8 results are OpenCV 4's cvtColor to within one level (HSV hue: within one step of its
// 0..179 circle), f32 within 1e-5 relative. Planes of different shapes are a shape_error.

/// A colour f32 image as three planes (R, G, B; or H, S, V; or Y, Cr, Cb).
using RgbF = std::array<DeviceMatrix<float>, 3>;

///@{
/// The `channels` planes of an interleaved image (rows x (cols * channels), 1 to 4 channels)
/// (cv::split). A width that is not a multiple of `channels`, or `channels` outside 1..4, is a
/// shape_error.
std::vector<DeviceMatrix<std::uint8_t>> split_channels(const MatrixView<const std::uint8_t>& interleaved, int channels);
std::vector<DeviceMatrix<float>> split_channels(const MatrixView<const float>& interleaved, int channels);
///@}
///@{
/// One interleaved image (rows x (cols * n)) from n = 1 to 4 planes of one shape (cv::merge).
DeviceMatrix<std::uint8_t> merge_channels(const std::vector<MatrixView<const std::uint8_t>>& planes);
DeviceMatrix<float> merge_channels(const std::vector<MatrixView<const float>>& planes);
///@}

///@{
/// Luma 0.299 R + 0.587 G + 0.114 B (cv::cvtColor COLOR_RGB2GRAY: u8 in OpenCV's 14-bit fixed
/// point, rounded).
DeviceMatrix<std::uint8_t> rgb_to_gray(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                                       const MatrixView<const std::uint8_t>& b);
DeviceMatrix<float> rgb_to_gray(const MatrixView<const float>& r, const MatrixView<const float>& g,
                                const MatrixView<const float>& b);
///@}
///@{
/// Three copies of a gray image (COLOR_GRAY2RGB).
Rgb8 gray_to_rgb(const MatrixView<const std::uint8_t>& gray);
RgbF gray_to_rgb(const MatrixView<const float>& gray);
///@}
///@{
/// H, S, V planes (COLOR_RGB2HSV). u8: H in 0..179 (degrees / 2), S and V in 0..255; f32 (RGB
/// in [0, 1]): H in degrees [0, 360), S and V in [0, 1].
Rgb8 rgb_to_hsv(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                const MatrixView<const std::uint8_t>& b);
RgbF rgb_to_hsv(const MatrixView<const float>& r, const MatrixView<const float>& g, const MatrixView<const float>& b);
///@}
///@{
/// R, G, B planes from H, S, V in rgb_to_hsv's ranges (COLOR_HSV2RGB).
Rgb8 hsv_to_rgb(const MatrixView<const std::uint8_t>& h, const MatrixView<const std::uint8_t>& s,
                const MatrixView<const std::uint8_t>& v);
RgbF hsv_to_rgb(const MatrixView<const float>& h, const MatrixView<const float>& s, const MatrixView<const float>& v);
///@}
///@{
/// Y, Cr, Cb planes (COLOR_RGB2YCrCb): Y as rgb_to_gray, Cr = (R - Y) 0.713 + delta,
/// Cb = (B - Y) 0.564 + delta, delta 128 for u8 (14-bit fixed point) and 0.5 for f32.
Rgb8 rgb_to_ycrcb(const MatrixView<const std::uint8_t>& r, const MatrixView<const std::uint8_t>& g,
                  const MatrixView<const std::uint8_t>& b);
RgbF rgb_to_ycrcb(const MatrixView<const float>& r, const MatrixView<const float>& g, const MatrixView<const float>& b);
///@}
///@{
/// R, G, B planes from Y, Cr, Cb (COLOR_YCrCb2RGB): R = Y + 1.403 Cr', G = Y - 0.714 Cr' -
/// 0.344 Cb', B = Y + 1.773 Cb', with Cr' = Cr - delta, Cb' = Cb - delta.
Rgb8 ycrcb_to_rgb(const MatrixView<const std::uint8_t>& y, const MatrixView<const std::uint8_t>& cr,
                  const MatrixView<const std::uint8_t>& cb);
RgbF ycrcb_to_rgb(const MatrixView<const float>& y, const MatrixView<const float>& cr, const MatrixView<const float>& cb);
///@}

// ---------------------------------------------------------------- intensity
// Exact against OpenCV 4. Each reads a matrix or a view and runs on the image's stream without
// blocking (otsu_threshold, which returns a host value, blocks).

/// How threshold maps a pixel p against the threshold t (OpenCV's THRESH_* types).
enum class Threshold {
  binary,       ///< p > t ? maxval : 0 (THRESH_BINARY)
  binary_inv,   ///< p > t ? 0 : maxval (THRESH_BINARY_INV)
  trunc,        ///< p > t ? t : p (THRESH_TRUNC)
  to_zero,      ///< p > t ? p : 0 (THRESH_TOZERO)
  to_zero_inv,  ///< p > t ? 0 : p (THRESH_TOZERO_INV)
  otsu,         ///< binary, with t chosen by Otsu's method on the image (THRESH_BINARY | THRESH_OTSU; u8 only)
};

/// The 256-bin histogram of a u8 image as a 1x256 int32 matrix (cv::calcHist with 256 bins over
/// [0, 256), as counts). An image of 2^31 pixels or more is a shape_error.
DeviceMatrix<std::int32_t> histogram(const MatrixView<const std::uint8_t>& img);

/// Histogram equalisation (cv::equalizeHist): each level mapped through the normalised
/// cumulative histogram, rounded as OpenCV does (its counts in 64 bits: any size of image, where
/// OpenCV's int counts stop at 2^31 pixels).
DeviceMatrix<std::uint8_t> equalize_hist(const MatrixView<const std::uint8_t>& img);

///@{
/// cv::threshold(img, dst, t, maxval, type). For u8, t is floored and maxval rounded and
/// saturated to 0..255 as OpenCV does; for f32 both are taken as float. Threshold::otsu ignores
/// `t` and uses otsu_threshold's value, computed on the device (u8 only: for f32 it is
/// std::invalid_argument, as is a type outside the enum or a value that is not finite).
DeviceMatrix<std::uint8_t> threshold(const MatrixView<const std::uint8_t>& img, double t, double maxval, Threshold type);
DeviceMatrix<float> threshold(const MatrixView<const float>& img, double t, double maxval, Threshold type);
///@}

/// The threshold Otsu's method picks for a u8 image (the value cv::threshold returns with
/// THRESH_OTSU); 0 for an empty image, any size of image (64-bit counts). Blocks until it is
/// known.
double otsu_threshold(const MatrixView<const std::uint8_t>& img);

// ------------------------------------------------------------------ neighbourhoods
// Morphology by a rectangular structuring element of ksize_rows x ksize_cols ones, any size
// (even sides too), as OpenCV's erode/dilate/morphologyEx with getStructuringElement(MORPH_RECT,
// Size(ksize_cols, ksize_rows)) and their defaults: anchor at (ksize_rows / 2, ksize_cols / 2),
// one iteration, pixels outside the image ignored (OpenCV's default border for morphology,
// BORDER_CONSTANT with morphologyDefaultBorderValue()). A view is an image of its own, as for the
// filters above. The cost per pixel barely grows with the element (van Herk / Gil-Werman along
// columns; along rows the same, or for float elements of up to 16 rows and u8 ones of 7 to 16
// rows windows doubled in log2(ksize_cols) steps). Floats compare as fminf / fmaxf, which pass
// over NaN pixels (a window of nothing but NaNs has no defined result). Runs on img's stream; a
// side below 1 is a shape_error.

///@{
/// Erosion: out(y, x) = min of img over the element placed at (y, x).
Image8 erode(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols);
DeviceMatrix<float> erode(const MatrixView<const float>& img, int ksize_rows, int ksize_cols);
///@}
///@{
/// Dilation: out(y, x) = max of img over the element placed at (y, x).
Image8 dilate(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols);
DeviceMatrix<float> dilate(const MatrixView<const float>& img, int ksize_rows, int ksize_cols);
///@}
///@{
/// Opening: dilate(erode(img)) with the same element (OpenCV morphologyEx MORPH_OPEN).
Image8 morphology_open(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols);
DeviceMatrix<float> morphology_open(const MatrixView<const float>& img, int ksize_rows, int ksize_cols);
///@}
///@{
/// Closing: erode(dilate(img)) with the same element (OpenCV morphologyEx MORPH_CLOSE).
Image8 morphology_close(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols);
DeviceMatrix<float> morphology_close(const MatrixView<const float>& img, int ksize_rows, int ksize_cols);
///@}

///@{
/// Box filter: the mean (or, with `normalize` false, the sum) of img over a ksize_rows x
/// ksize_cols window anchored at its centre (ksize_rows / 2, ksize_cols / 2), borders reflected
/// (OpenCV's default, BORDER_REFLECT_101: ... 2 1 | 0 1 2 ...), as OpenCV's boxFilter with
/// ddepth -1 (cv::blur when normalised). Sums are exact ints for u8, doubles for float; u8
/// means are rounded to nearest, halves up (OpenCV rounds some halves down: at most 1 apart),
/// sums saturated. Sides from 1 to 255, even ones
/// too; others are a shape_error.
Image8 box_filter(const MatrixView<const std::uint8_t>& img, int ksize_rows, int ksize_cols, bool normalize = true);
DeviceMatrix<float> box_filter(const MatrixView<const float>& img, int ksize_rows, int ksize_cols,
                               bool normalize = true);
///@}
///@{
/// Integral image in OpenCV's layout: (rows + 1) x (cols + 1), out(y, x) = sum of img(0..y-1,
/// 0..x-1), so row 0 and column 0 are zeros (cv::integral's sum). u8 sums in int32 (which wrap
/// past 2^31 - 1, as OpenCV's: over 8.4 million pixels of 255), float sums in double. An empty
/// image gives its (rows + 1) x (cols + 1) zeros.
DeviceMatrix<std::int32_t> integral(const MatrixView<const std::uint8_t>& img);
DeviceMatrix<double> integral(const MatrixView<const float>& img);
///@}
///@{
/// Median of the ksize x ksize window around each pixel, borders replicated, as OpenCV's
/// medianBlur. ksize 1 (a copy), 3, 5 or 7 for u8; 1, 3 or 5 for float (the sizes OpenCV takes
/// for float); any other is a shape_error. Exact: the result is always one of the inputs. Floats
/// compare as fminf / fmaxf, which pass over a NaN where it meets a number: with NaN pixels in a
/// window the result is one of its values, not necessarily the median of its numbers.
Image8 median_blur(const MatrixView<const std::uint8_t>& img, int ksize);
DeviceMatrix<float> median_blur(const MatrixView<const float>& img, int ksize);
///@}
/// Canny edges, as OpenCV's Canny(img, edges, low, high) with its defaults: 3x3 Sobel
/// derivatives (borders replicated), the L1 magnitude |dx| + |dy|, non-maximum suppression in
/// OpenCV's four sectors, thresholds floor(low) and floor(high), hysteresis: a pixel is an edge
/// (255) when it survives suppression with a magnitude above low and is 8-connected through such
/// pixels to one above high; every other pixel is 0. Exact. Thresholds that are not finite, or
/// low > high (which OpenCV swaps), are std::invalid_argument. Asynchronous on img's stream (the
/// hysteresis decides on the device whether chains cross tiles), except for images of more than
/// 2^25 tiles of 32 x 32 (over 3.4e10 pixels), whose hysteresis repeats until nothing changes,
/// which the host reads, waiting for the stream.
Image8 canny(const MatrixView<const std::uint8_t>& img, double low, double high);

}  // namespace devmat
