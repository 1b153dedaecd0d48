// Images in and out, and image filters. Plain C++.
/// @file
/// Images in and out (load_gray, load_rgb, save_image) and image filters (filter2d,
/// gaussian_blur, sobel).
#pragma once

#include <devmat/device_matrix.hpp>

#include <array>
#include <cstdint>
#include <string>

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
/// the calling thread's Stream::per_thread() or on `stream`; errors as load_gray.
Rgb8 load_rgb(const std::string& path);
Rgb8 load_rgb(const std::string& path, const Stream& stream);
///@}
///@{
/// Writes PNG (.png) or PGM/PPM (.pgm/.ppm) chosen by the extension; throws io_error for any
/// other extension or a failed write, and writes nothing on failure. Colour saved as .pgm is
/// converted to luma (the weights above); gray saved as .ppm has three equal channels. RGB
/// planes of different shapes are a shape_error. Blocks until the file is written.
void save_image(const std::string& path, const MatrixView<const std::uint8_t>& gray);
void save_image(const std::string& path, const Rgb8& rgb);
///@}

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

// ------------------------------------------------------------------ neighbourhoods
// Morphology by a rectangular structuring element of ksize_rows x ksize_cols ones, any size
// (even sides too), as OpenCV's erode/dilate/morphologyEx with getStructuringElement(MORPH_RECT,
// Size(ksize_cols, ksize_rows)) and their defaults: anchor at (ksize_rows / 2, ksize_cols / 2),
// one iteration, pixels outside the image ignored (OpenCV's default border for morphology,
// BORDER_CONSTANT with morphologyDefaultBorderValue()). A view is an image of its own, as for the
// filters above. The cost per pixel does not grow with the element (van Herk / Gil-Werman, rows
// then columns). Runs on img's stream; a side below 1 is a shape_error.

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
/// for float); any other is a shape_error. Exact: the result is always one of the inputs.
Image8 median_blur(const MatrixView<const std::uint8_t>& img, int ksize);
DeviceMatrix<float> median_blur(const MatrixView<const float>& img, int ksize);
///@}
/// Canny edges, as OpenCV's Canny(img, edges, low, high) with its defaults: 3x3 Sobel
/// derivatives (borders replicated), the L1 magnitude |dx| + |dy|, non-maximum suppression in
/// OpenCV's four sectors, thresholds floor(low) and floor(high), hysteresis: a pixel is an edge
/// (255) when it survives suppression with a magnitude above low and is 8-connected through such
/// pixels to one above high; every other pixel is 0. Exact. Thresholds that are not finite, or
/// low > high (which OpenCV swaps), are std::invalid_argument. Waits for img's stream (the
/// hysteresis repeats until nothing changes, which the host reads).
Image8 canny(const MatrixView<const std::uint8_t>& img, double low, double high);

}  // namespace devmat
