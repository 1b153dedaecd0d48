// The host side of image I/O: files to 8-bit pixel buffers and back, with no device involved
// (src/image_io.cpp; the host test test/test_image_io.cpp includes this header directly).
// Plain C++.
#pragma once

#include <devmat/error.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace devmat::detail {

/// An 8-bit image in host memory: rows x cols pixels of `channels` interleaved bytes each
/// (1 = gray, 3 = R, G, B), row-major with no padding.
struct HostImage {
  Index rows = 0, cols = 0;
  int channels = 0;
  std::vector<std::uint8_t> pixels;  // rows * cols * channels
};

/// The file formats save_image writes, chosen by the path's extension (case-insensitive).
enum class ImageFormat { png, pgm, ppm };

/// The format the extension of `path` selects: .png, .pgm or .ppm; throws io_error naming the
/// file for any other extension (or none).
ImageFormat image_format_for(const std::string& path);

/// Luma of one RGB pixel: 0.299 R + 0.587 G + 0.114 B, rounded to nearest (ITU-R BT.601,
/// the weights of OpenCV's cvtColor and of PGM tools).
std::uint8_t luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) noexcept;

/// Reads a PNG, JPEG, BMP or PGM/PPM (binary P5/P6 or ASCII P2/P3) file as one gray channel:
/// colour becomes luma, alpha is ignored, 16-bit samples are scaled to 8 bits.
/// Throws io_error naming the file and the reason (cannot open, empty, not an image,
/// truncated, corrupt, too large).
HostImage decode_gray(const std::string& path);
/// As decode_gray, as three interleaved channels (gray files give three equal channels).
HostImage decode_rgb(const std::string& path);

/// Writes `image` (1 or 3 channels) as PNG, PGM or PPM by the extension of `path`: three
/// channels to .pgm are converted to luma, one channel to .ppm is replicated into R, G, B.
/// Encodes in memory, writes a temporary file in the same folder and renames it over `path`,
/// so `path` is either fully written or left as it was. Throws io_error naming the file and
/// the reason (unsupported extension, empty image, cannot create, write failed).
void encode_image(const std::string& path, const HostImage& image);

/// `image` (1 or 3 channels, rows and columns up to 2^31 - 1) as a PNG file's bytes, its data
/// in stored (uncompressed) deflate blocks: what encode_image writes for images past what the
/// compressing encoder takes (about 2^30 bytes of pixels). Any PNG decoder reads it.
std::vector<std::uint8_t> encode_png_stored(const HostImage& image);

/// `bytes`, a whole PNG file (`path` names it in errors), decoded by devmat's own PNG decoder,
/// which decode_gray and decode_rgb use for PNGs too large for stb_image (its pixels over
/// 2^30 bytes, a side over 2^24 or the file over 2 GiB): 8-bit gray, gray+alpha, RGB or RGBA
/// without interlacing, the channels as stored (1 to 4). Throws io_error naming the file for
/// anything else and for any corrupt or truncated data. Here so that tests reach it directly.
HostImage decode_png_own(const std::string& path, const std::vector<std::uint8_t>& bytes);

/// For tests: while on, decode_gray and decode_rgb read every PNG with decode_png_own.
void force_own_png_decoder(bool on) noexcept;

}  // namespace devmat::detail
