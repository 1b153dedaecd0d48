// Host test: the file side of image I/O, with no GPU. Round trips through the host codec
// (src/detail/image_codec.hpp), files from other encoders (stb_image_write's JPEG and RGBA
// PNG, hand-built BMP and PGM/PPM variants), and every way a file can be bad: missing, a
// directory, empty, not an image, truncated at every length, corrupt, an unsupported
// extension, a failed write. Failed writes must leave nothing behind.
#include "support/util.hpp"

#include "detail/image_codec.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <queue>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

// stb_image and stb_image_write, compiled in here too (static, so apart from libdevmat's own
// copy): stb_image is the oracle for devmat's own PNG decoder, stb_image_write makes PNGs with
// each filter for it.
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

using namespace devmat;
using devmat::detail::HostImage;
namespace fs = std::filesystem;

namespace {

// Made with stb_image_write (JPEG quality 95; PNG with alpha) from the patterns that the
// tests below recompute.
// kJpegRgb16x8: 680 bytes
constexpr std::uint8_t kJpegRgb16x8[] = {
    0xff,0xd8,0xff,0xe0,0x00,0x10,0x4a,0x46,0x49,0x46,0x00,0x01,0x01,0x00,0x00,0x01,
    0x00,0x01,0x00,0x00,0xff,0xdb,0x00,0x84,0x00,0x02,0x01,0x01,0x01,0x01,0x01,0x02,
    0x01,0x01,0x01,0x02,0x02,0x02,0x02,0x02,0x04,0x03,0x02,0x02,0x02,0x02,0x05,0x04,
    0x04,0x03,0x04,0x06,0x05,0x06,0x06,0x06,0x05,0x06,0x06,0x06,0x07,0x09,0x08,0x06,
    0x07,0x09,0x07,0x06,0x06,0x08,0x0b,0x08,0x09,0x0a,0x0a,0x0a,0x0a,0x0a,0x06,0x08,
    0x0b,0x0c,0x0b,0x0a,0x0c,0x09,0x0a,0x0a,0x0a,0x01,0x02,0x02,0x02,0x02,0x02,0x02,
    0x05,0x03,0x03,0x05,0x0a,0x07,0x06,0x07,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,
    0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,
    0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,
    0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0x0a,0xff,0xc0,0x00,0x11,0x08,0x00,
    0x08,0x00,0x10,0x03,0x01,0x11,0x00,0x02,0x11,0x01,0x03,0x11,0x01,0xff,0xc4,0x01,
    0xa2,0x00,0x00,0x01,0x05,0x01,0x01,0x01,0x01,0x01,0x01,0x00,0x00,0x00,0x00,0x00,
    0x00,0x00,0x00,0x01,0x02,0x03,0x04,0x05,0x06,0x07,0x08,0x09,0x0a,0x0b,0x10,0x00,
    0x02,0x01,0x03,0x03,0x02,0x04,0x03,0x05,0x05,0x04,0x04,0x00,0x00,0x01,0x7d,0x01,
    0x02,0x03,0x00,0x04,0x11,0x05,0x12,0x21,0x31,0x41,0x06,0x13,0x51,0x61,0x07,0x22,
    0x71,0x14,0x32,0x81,0x91,0xa1,0x08,0x23,0x42,0xb1,0xc1,0x15,0x52,0xd1,0xf0,0x24,
    0x33,0x62,0x72,0x82,0x09,0x0a,0x16,0x17,0x18,0x19,0x1a,0x25,0x26,0x27,0x28,0x29,
    0x2a,0x34,0x35,0x36,0x37,0x38,0x39,0x3a,0x43,0x44,0x45,0x46,0x47,0x48,0x49,0x4a,
    0x53,0x54,0x55,0x56,0x57,0x58,0x59,0x5a,0x63,0x64,0x65,0x66,0x67,0x68,0x69,0x6a,
    0x73,0x74,0x75,0x76,0x77,0x78,0x79,0x7a,0x83,0x84,0x85,0x86,0x87,0x88,0x89,0x8a,
    0x92,0x93,0x94,0x95,0x96,0x97,0x98,0x99,0x9a,0xa2,0xa3,0xa4,0xa5,0xa6,0xa7,0xa8,
    0xa9,0xaa,0xb2,0xb3,0xb4,0xb5,0xb6,0xb7,0xb8,0xb9,0xba,0xc2,0xc3,0xc4,0xc5,0xc6,
    0xc7,0xc8,0xc9,0xca,0xd2,0xd3,0xd4,0xd5,0xd6,0xd7,0xd8,0xd9,0xda,0xe1,0xe2,0xe3,
    0xe4,0xe5,0xe6,0xe7,0xe8,0xe9,0xea,0xf1,0xf2,0xf3,0xf4,0xf5,0xf6,0xf7,0xf8,0xf9,
    0xfa,0x01,0x00,0x03,0x01,0x01,0x01,0x01,0x01,0x01,0x01,0x01,0x01,0x00,0x00,0x00,
    0x00,0x00,0x00,0x01,0x02,0x03,0x04,0x05,0x06,0x07,0x08,0x09,0x0a,0x0b,0x11,0x00,
    0x02,0x01,0x02,0x04,0x04,0x03,0x04,0x07,0x05,0x04,0x04,0x00,0x01,0x02,0x77,0x00,
    0x01,0x02,0x03,0x11,0x04,0x05,0x21,0x31,0x06,0x12,0x41,0x51,0x07,0x61,0x71,0x13,
    0x22,0x32,0x81,0x08,0x14,0x42,0x91,0xa1,0xb1,0xc1,0x09,0x23,0x33,0x52,0xf0,0x15,
    0x62,0x72,0xd1,0x0a,0x16,0x24,0x34,0xe1,0x25,0xf1,0x17,0x18,0x19,0x1a,0x26,0x27,
    0x28,0x29,0x2a,0x35,0x36,0x37,0x38,0x39,0x3a,0x43,0x44,0x45,0x46,0x47,0x48,0x49,
    0x4a,0x53,0x54,0x55,0x56,0x57,0x58,0x59,0x5a,0x63,0x64,0x65,0x66,0x67,0x68,0x69,
    0x6a,0x73,0x74,0x75,0x76,0x77,0x78,0x79,0x7a,0x82,0x83,0x84,0x85,0x86,0x87,0x88,
    0x89,0x8a,0x92,0x93,0x94,0x95,0x96,0x97,0x98,0x99,0x9a,0xa2,0xa3,0xa4,0xa5,0xa6,
    0xa7,0xa8,0xa9,0xaa,0xb2,0xb3,0xb4,0xb5,0xb6,0xb7,0xb8,0xb9,0xba,0xc2,0xc3,0xc4,
    0xc5,0xc6,0xc7,0xc8,0xc9,0xca,0xd2,0xd3,0xd4,0xd5,0xd6,0xd7,0xd8,0xd9,0xda,0xe2,
    0xe3,0xe4,0xe5,0xe6,0xe7,0xe8,0xe9,0xea,0xf2,0xf3,0xf4,0xf5,0xf6,0xf7,0xf8,0xf9,
    0xfa,0xff,0xda,0x00,0x0c,0x03,0x01,0x00,0x02,0x11,0x03,0x11,0x00,0x3f,0x00,0xf0,
    0x3f,0x85,0x1f,0xf0,0x4a,0x9f,0xf5,0x5f,0xf1,0x4d,0xfa,0x7f,0xcb,0x2a,0xfd,0x1b,
    0x39,0xf1,0x87,0x7f,0xde,0x7e,0x27,0xe1,0x5e,0x1b,0x78,0xf5,0xf0,0x7e,0xf7,0xf1,
    0x3e,0x99,0xf8,0x51,0xff,0x00,0x04,0xa9,0xff,0x00,0x55,0xff,0x00,0x14,0xdf,0xa7,
    0xfc,0xb2,0xaf,0xca,0x33,0x9f,0x18,0x77,0xfd,0xe7,0xe2,0x7f,0xa0,0x1e,0x1b,0x78,
    0xf5,0xf0,0x7e,0xf7,0xf1,0x3f,0xff,0xd9,
};
// kPngRgba5x3: 83 bytes
constexpr std::uint8_t kPngRgba5x3[] = {
    0x89,0x50,0x4e,0x47,0x0d,0x0a,0x1a,0x0a,0x00,0x00,0x00,0x0d,0x49,0x48,0x44,0x52,
    0x00,0x00,0x00,0x05,0x00,0x00,0x00,0x03,0x08,0x06,0x00,0x00,0x00,0x5b,0x36,0xc5,
    0xf8,0x00,0x00,0x00,0x1a,0x49,0x44,0x41,0x54,0x78,0x5e,0x63,0x64,0x60,0xf8,0xcf,
    0x65,0xc4,0x70,0xc3,0x06,0x19,0xb3,0x30,0xa4,0x30,0x60,0x00,0xac,0x82,0x00,0x55,
    0xf7,0x06,0xf3,0x0d,0xca,0x66,0x10,0x00,0x00,0x00,0x00,0x49,0x45,0x4e,0x44,0xae,
    0x42,0x60,0x82,
};
// kPngGrayAlpha4x2: 76 bytes
constexpr std::uint8_t kPngGrayAlpha4x2[] = {
    0x89,0x50,0x4e,0x47,0x0d,0x0a,0x1a,0x0a,0x00,0x00,0x00,0x0d,0x49,0x48,0x44,0x52,
    0x00,0x00,0x00,0x04,0x00,0x00,0x00,0x02,0x08,0x04,0x00,0x00,0x00,0xd5,0xa1,0xb5,
    0xe8,0x00,0x00,0x00,0x13,0x49,0x44,0x41,0x54,0x78,0x5e,0x63,0x64,0x60,0x97,0x63,
    0x00,0x41,0x96,0x14,0x06,0x08,0x03,0x00,0x09,0xd2,0x01,0x25,0x32,0x9e,0x9c,0xd1,
    0x00,0x00,0x00,0x00,0x49,0x45,0x4e,0x44,0xae,0x42,0x60,0x82,
};

using Bytes = std::vector<std::uint8_t>;

/// A fresh folder under the system's temporary folder, removed with its contents.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "devmat-image-io-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::set<std::string> entries() const {
    std::set<std::string> s;
    for (const auto& e : fs::directory_iterator(path)) s.insert(e.path().filename().string());
    return s;
  }
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(f.good());
}
void write_text(const std::string& path, const std::string& s) { write_bytes(path, Bytes(s.begin(), s.end())); }

Bytes read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

HostImage random_image(Index rows, Index cols, int channels) {
  HostImage img;
  img.rows = rows;
  img.cols = cols;
  img.channels = channels;
  img.pixels.resize(std::size_t(rows * cols * channels));
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& p : img.pixels) p = static_cast<std::uint8_t>(d(test::rng()));
  return img;
}

/// The reference luma: the real value 0.299 R + 0.587 G + 0.114 B, rounded half up.
int luma_ref(int r, int g, int b) { return (299 * r + 587 * g + 114 * b + 500) / 1000; }

Bytes luma_of(const HostImage& rgb) {
  Bytes out(std::size_t(rgb.rows * rgb.cols));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint8_t>(luma_ref(rgb.pixels[3 * i], rgb.pixels[3 * i + 1], rgb.pixels[3 * i + 2]));
  return out;
}

Bytes replicate3(const Bytes& gray) {
  Bytes out(3 * gray.size());
  for (std::size_t i = 0; i < gray.size(); ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = gray[i];
  return out;
}

/// Calls `f`, which must throw io_error whose message names `path` and contains `reason`
/// (a failed check, not an abort, when it does not, so loops over cases go on).
void check_io_error(const std::function<void()>& f, const std::string& path, const std::string& reason) {
  CAPTURE(path, reason);
  bool threw = false;
  std::string what;
  try {
    f();
  } catch (const io_error& e) {
    threw = true;
    what = e.what();
  }
  if (!threw) {
    FAIL_CHECK("no io_error thrown");
    return;
  }
  CHECK_THAT(what, test::contains(path));
  CHECK_THAT(what, test::contains(reason));
}

/// Sets the size of the file at `path`: past its end a sparse hole of zeros, which costs
/// no disk space however large.
void set_size(const std::string& path, std::uint64_t bytes) {
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(bytes)) == 0);
}

/// `jpeg` with `n` APP15 segments of the largest size (65535 bytes with the length) after its
/// start-of-image marker, so the frame header lies past the first n * 64 KiB.
Bytes with_app_segments(const Bytes& jpeg, int n) {
  Bytes out(jpeg.begin(), jpeg.begin() + 2);
  for (int i = 0; i < n; ++i) {
    out.insert(out.end(), {0xFF, 0xEF, 0xFF, 0xFF});
    out.insert(out.end(), 65533, static_cast<std::uint8_t>(i));
  }
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

void put16(Bytes& b, unsigned v) { b.push_back(v & 0xFF), b.push_back((v >> 8) & 0xFF); }
void put32(Bytes& b, std::uint32_t v) { put16(b, v & 0xFFFF), put16(b, v >> 16); }

/// An uncompressed BMP: 24- or 32-bit from RGB, or 8-bit with a gray palette from gray.
Bytes make_bmp(const HostImage& img, int bpp, bool top_down) {
  const auto w = static_cast<std::uint32_t>(img.cols), h = static_cast<std::uint32_t>(img.rows);
  const std::uint32_t stride = (w * bpp + 31) / 32 * 4;
  const std::uint32_t palette = bpp == 8 ? 256 * 4 : 0;
  const std::uint32_t offset = 14 + 40 + palette;
  Bytes b = {'B', 'M'};
  put32(b, offset + stride * h), put32(b, 0), put32(b, offset);
  put32(b, 40), put32(b, w), put32(b, top_down ? static_cast<std::uint32_t>(-static_cast<std::int32_t>(h)) : h);
  put16(b, 1), put16(b, static_cast<unsigned>(bpp)), put32(b, 0), put32(b, stride * h);
  put32(b, 2835), put32(b, 2835), put32(b, bpp == 8 ? 256 : 0), put32(b, 0);
  for (std::uint32_t i = 0; i < palette / 4; ++i) b.insert(b.end(), {std::uint8_t(i), std::uint8_t(i), std::uint8_t(i), 0});
  for (std::uint32_t fr = 0; fr < h; ++fr) {
    const std::uint32_t y = top_down ? fr : h - 1 - fr;
    const std::size_t start = b.size();
    for (std::uint32_t x = 0; x < w; ++x) {
      const std::uint8_t* p = &img.pixels[(std::size_t(y) * w + x) * img.channels];
      if (bpp == 8) b.push_back(p[0]);
      else b.insert(b.end(), {p[2], p[1], p[0]});
      if (bpp == 32) b.push_back(255);
    }
    b.resize(start + stride, 0);
  }
  return b;
}

// ---------------------------------------------------------------- devmat's own PNG decoder
// PNGs too large for stb_image are decoded by devmat itself (detail::decode_png_own); the tests
// below run it on small files, with stb_image (a copy of its own, included above) as the
// oracle. stb_image_write gives fixed-Huffman streams with each of the five filters and
// detail::encode_png_stored stored blocks; the dynamic-Huffman streams, block mixes and
// malformed streams are built here.

/// The PNG chunk CRC (ISO 3309), bit by bit.
std::uint32_t crc32_ref(const std::uint8_t* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

void add_chunk(Bytes& png, const char* type, const Bytes& data) {
  put_be32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t at = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  put_be32(png, crc32_ref(&png[at], data.size() + 4));
}

/// A PNG of `zlib` (cut into IDAT chunks of the given sizes, the rest in one more; a size 0 is
/// an empty IDAT chunk) under an IHDR of the given fields.
Bytes make_png(std::uint32_t w, std::uint32_t h, int depth, int color, const Bytes& zlib,
               const std::vector<std::size_t>& idat_sizes = {}, int interlace = 0) {
  Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w), put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {std::uint8_t(depth), std::uint8_t(color), 0, 0, std::uint8_t(interlace)});
  add_chunk(png, "IHDR", ihdr);
  std::size_t pos = 0;
  for (std::size_t n : idat_sizes) {
    n = std::min(n, zlib.size() - pos);
    add_chunk(png, "IDAT", Bytes(zlib.begin() + std::ptrdiff_t(pos), zlib.begin() + std::ptrdiff_t(pos + n)));
    pos += n;
  }
  if (pos < zlib.size() || idat_sizes.empty()) add_chunk(png, "IDAT", Bytes(zlib.begin() + std::ptrdiff_t(pos), zlib.end()));
  add_chunk(png, "IEND", {});
  return png;
}

/// stb_image's decoding of `png`, channels as stored; channels 0 where stb refuses it.
HostImage stb_decode(const Bytes& png) {
  int w = 0, h = 0, n = 0;
  stbi_uc* px = stbi_load_from_memory(png.data(), static_cast<int>(png.size()), &w, &h, &n, 0);
  HostImage img;
  if (!px) return img;
  img.rows = h, img.cols = w, img.channels = n;
  img.pixels.assign(px, px + std::size_t(w) * h * n);
  stbi_image_free(px);
  return img;
}

/// Checks that devmat's decoder gives exactly what stb_image gives for `png` (which stb reads).
void check_same_as_stb(const Bytes& png) {
  const HostImage want = stb_decode(png);
  REQUIRE(want.channels > 0);
  const HostImage got = detail::decode_png_own("mem.png", png);
  CHECK(got.rows == want.rows);
  CHECK(got.cols == want.cols);
  CHECK(got.channels == want.channels);
  CHECK(got.pixels == want.pixels);
}

/// Deflate's bits, least significant first; Huffman codes go most significant bit first.
struct BitWriter {
  Bytes out;
  std::uint64_t acc = 0;
  int n = 0;
  void put(std::uint32_t v, int bits) {
    acc |= std::uint64_t(v) << n;
    n += bits;
    for (; n >= 8; n -= 8) out.push_back(static_cast<std::uint8_t>(acc)), acc >>= 8;
  }
  void put_code(std::uint32_t code, int len) {
    std::uint32_t rev = 0;
    for (int i = 0; i < len; ++i) rev |= ((code >> i) & 1) << (len - 1 - i);
    put(rev, len);
  }
  void align() {
    if (n) put(0, 8 - n);
  }
};

/// A canonical Huffman code from its lengths (RFC 1951 3.2.2).
struct Code {
  std::vector<int> len;
  std::vector<std::uint32_t> code;
  explicit Code(std::vector<int> lengths) : len(std::move(lengths)), code(len.size()) {
    int count[16] = {}, next[16] = {};
    for (int l : len) ++count[l];
    count[0] = 0;
    for (int l = 1, c = 0; l <= 15; ++l) next[l] = c = (c + count[l - 1]) << 1;
    for (std::size_t s = 0; s < len.size(); ++s)
      if (len[s]) code[s] = static_cast<std::uint32_t>(next[len[s]]++);
  }
  void put(BitWriter& w, int sym) const { w.put_code(code[std::size_t(sym)], len[std::size_t(sym)]); }
};

Code fixed_lit_code() {
  std::vector<int> l(288, 8);
  std::fill(l.begin() + 144, l.begin() + 256, 9), std::fill(l.begin() + 256, l.begin() + 280, 7);
  return Code(l);
}
const Code& fixed_lit() {
  static const Code c = fixed_lit_code();
  return c;
}
const Code& fixed_dist() {
  static const Code c(std::vector<int>(32, 5));
  return c;
}

/// Huffman code lengths for the frequencies, none over `limit` (the frequencies are halved
/// until the tree is shallow enough). At least two symbols must have a frequency.
std::vector<int> code_lengths(std::vector<std::uint64_t> f, int limit) {
  for (;;) {
    std::vector<int> parent(2 * f.size(), -1);
    using Node = std::pair<std::uint64_t, int>;
    std::priority_queue<Node, std::vector<Node>, std::greater<Node>> q;
    for (std::size_t s = 0; s < f.size(); ++s)
      if (f[s]) q.push({f[s], int(s)});
    int next = int(f.size());
    while (q.size() > 1) {
      const Node a = q.top();
      q.pop();
      const Node b = q.top();
      q.pop();
      parent[std::size_t(a.second)] = parent[std::size_t(b.second)] = next;
      q.push({a.first + b.first, next++});
    }
    std::vector<int> len(f.size(), 0);
    int deepest = 0;
    for (std::size_t s = 0; s < f.size(); ++s) {
      if (!f[s]) continue;
      for (int p = parent[s]; p >= 0; p = parent[std::size_t(p)]) ++len[s];
      deepest = std::max(deepest, len[s]);
    }
    if (deepest <= limit) return len;
    for (auto& x : f) x = (x + 1) / 2;
  }
}

constexpr int kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                              31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr int kDistBase[30] = {1,    2,    3,    4,    5,    7,    9,    13,    17,    25,   33,   49,   65,   97,   129,
                               193,  257,  385,  513,  769,  1025, 1537, 2049,  3073,  4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

int len_symbol(int len) {  // 0..28
  int i = 28;
  while (kLenBase[i] > len) --i;
  return i;
}
int dist_symbol(int d) {  // 0..29
  int i = 29;
  while (kDistBase[i] > d) --i;
  return i;
}

/// A literal (dist 0) or a match.
struct Token {
  int len = 0, dist = 0;
  std::uint8_t lit = 0;
};

/// A deflate encoder for tests: LZ77 over a 32 KiB window (hash chains, the longest match up to
/// 258 bytes), blocks of random sizes and types (stored, fixed or dynamic Huffman), so that
/// matches cross blocks and reach back the full window.
class TestDeflater {
 public:
  enum Mix { stored_only, fixed_only, dynamic_only, mixed };
  explicit TestDeflater(const Bytes& data) : d_(data), head_(1 << 16, -1), prev_(32768, -1) {}

  Bytes zlib(Mix mix, std::mt19937_64& rng) {
    BitWriter w;
    w.put(0x78, 8), w.put(0xDA, 8);  // deflate, 32 KiB window; (0x78DA % 31 == 0)
    std::uniform_int_distribution<int> type_of(0, 2), size_of(0, 3);
    const std::size_t n = d_.size();
    for (std::size_t pos = 0;;) {
      const int pick = size_of(rng);
      const std::size_t size = pick == 0 ? rng() % 300 : pick == 1 ? rng() % 5000 : pick == 2 ? rng() % 70000 : n;
      const std::size_t end = std::min(n, pos + size);
      const bool last = end == n;
      const int type = mix == mixed ? type_of(rng) : int(mix);
      if (type == 0) {
        for (std::size_t at = pos;;) {  // stored blocks of at most 65535 bytes
          const std::size_t k = std::min<std::size_t>(65535, end - at);
          w.put(last && at + k == end, 1), w.put(0, 2), w.align();
          w.put(std::uint32_t(k), 16), w.put(std::uint32_t(~k & 0xFFFF), 16);
          for (std::size_t i = 0; i < k; ++i) w.put(d_[at + i], 8);
          at += k;
          if (at == end) break;
        }
      } else {
        huffman_block(w, tokens(pos, end), type == 2, last);
      }
      pos = end;
      if (last) break;
    }
    w.align();
    std::uint32_t a = 1, b = 0;
    for (std::uint8_t c : d_) a = (a + c) % 65521, b = (b + a) % 65521;
    w.put(b >> 8, 8), w.put(b & 255, 8), w.put(a >> 8, 8), w.put(a & 255, 8);
    return w.out;
  }

 private:
  std::size_t hash(std::size_t p) const { return ((d_[p] << 10) ^ (d_[p + 1] << 5) ^ d_[p + 2]) & 0xFFFF; }
  void insert_upto(std::size_t pos) {
    for (; inserted_ < pos; ++inserted_)
      if (inserted_ + 2 < d_.size()) {
        const std::size_t h = hash(inserted_);
        prev_[inserted_ % 32768] = head_[h];
        head_[h] = static_cast<long>(inserted_);
      }
  }
  std::vector<Token> tokens(std::size_t pos, std::size_t end) {
    std::vector<Token> t;
    while (pos < end) {
      insert_upto(pos);
      Token best;
      best.lit = d_[pos];
      if (pos + 2 < end) {
        const std::size_t most = std::min<std::size_t>(258, end - pos);
        int tries = 0;
        // The chain of earlier positions with the same hash, newest first (prev_ is a ring:
        // an entry overwritten by a newer position ends the chain).
        for (long c = head_[hash(pos)]; c >= 0 && pos - std::size_t(c) <= 32768 && tries < 256; ++tries) {
          std::size_t l = 0;
          while (l < most && d_[std::size_t(c) + l] == d_[pos + l]) ++l;
          if (l >= 3 && int(l) > best.len) best.len = int(l), best.dist = int(pos - std::size_t(c));
          if (l == most) break;
          const long next = prev_[std::size_t(c) % 32768];
          if (next >= c) break;
          c = next;
        }
      }
      t.push_back(best);
      pos += best.len ? std::size_t(best.len) : 1;
    }
    return t;
  }
  static void huffman_block(BitWriter& w, const std::vector<Token>& toks, bool dynamic, bool last) {
    w.put(last, 1), w.put(dynamic ? 2 : 1, 2);
    Code lit = fixed_lit(), dist = fixed_dist();
    if (dynamic) {
      std::vector<std::uint64_t> fl(286), fd(30);
      for (const Token& t : toks) {
        if (t.len) ++fl[std::size_t(257 + len_symbol(t.len))], ++fd[std::size_t(dist_symbol(t.dist))];
        else ++fl[t.lit];
      }
      fl[256] = 1;
      if (std::count_if(fl.begin(), fl.end(), [](auto x) { return x > 0; }) < 2) fl[0] = 1;
      if (std::count_if(fd.begin(), fd.end(), [](auto x) { return x > 0; }) < 2) fd[0] += 1, fd[1] += 1;
      lit = Code(code_lengths(fl, 15));
      dist = Code(code_lengths(fd, 15));
      write_dynamic_header(w, lit.len, dist.len);
    }
    for (const Token& t : toks) {
      if (!t.len) {
        lit.put(w, t.lit);
        continue;
      }
      const int ls = len_symbol(t.len), ds = dist_symbol(t.dist);
      lit.put(w, 257 + ls);
      w.put(std::uint32_t(t.len - kLenBase[ls]), kLenExtra[ls]);
      dist.put(w, ds);
      w.put(std::uint32_t(t.dist - kDistBase[ds]), kDistExtra[ds]);
    }
    lit.put(w, 256);
  }
  // HLIT, HDIST, HCLEN, the code-length code, then the code lengths run-length coded (16:
  // repeat the previous, 17/18: runs of zeros), RFC 1951 3.2.7.
  static void write_dynamic_header(BitWriter& w, std::vector<int> ll, std::vector<int> dl) {
    std::size_t hlit = 286, hdist = 30;
    while (hlit > 257 && ll[hlit - 1] == 0) --hlit;
    while (hdist > 1 && dl[hdist - 1] == 0) --hdist;
    std::vector<int> seq(ll.begin(), ll.begin() + std::ptrdiff_t(hlit));
    seq.insert(seq.end(), dl.begin(), dl.begin() + std::ptrdiff_t(hdist));
    struct Item {
      int sym, bits, extra;
    };
    std::vector<Item> items;
    for (std::size_t i = 0; i < seq.size();) {
      std::size_t run = 1;
      while (i + run < seq.size() && seq[i + run] == seq[i]) ++run;
      const int v = seq[i];
      i += run;
      if (v == 0) {
        for (; run >= 11; run -= std::min<std::size_t>(run, 138)) items.push_back({18, 7, int(std::min<std::size_t>(run, 138) - 11)});
        if (run >= 3) items.push_back({17, 3, int(run - 3)}), run = 0;
      } else {
        items.push_back({v, 0, 0}), --run;
        for (; run >= 3; run -= std::min<std::size_t>(run, 6)) items.push_back({16, 2, int(std::min<std::size_t>(run, 6) - 3)});
      }
      for (; run > 0; --run) items.push_back({v, 0, 0});
    }
    std::vector<std::uint64_t> fc(19);
    for (const Item& it : items) ++fc[std::size_t(it.sym)];
    if (std::count_if(fc.begin(), fc.end(), [](auto x) { return x > 0; }) < 2) ++fc[fc[0] ? 1 : 0];
    const Code cl(code_lengths(fc, 7));
    static const int kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    int hclen = 19;
    while (hclen > 4 && cl.len[std::size_t(kOrder[hclen - 1])] == 0) --hclen;
    w.put(std::uint32_t(hlit - 257), 5), w.put(std::uint32_t(hdist - 1), 5), w.put(std::uint32_t(hclen - 4), 4);
    for (int i = 0; i < hclen; ++i) w.put(std::uint32_t(cl.len[std::size_t(kOrder[i])]), 3);
    for (const Item& it : items) cl.put(w, it.sym), w.put(std::uint32_t(it.extra), it.bits);
  }

  const Bytes& d_;
  std::vector<long> head_, prev_;
  std::size_t inserted_ = 0;
};

/// PNG filtered data for a w x h image of `n` channels: each row a filter type byte (random,
/// 0-4) and bytes whose kind depends on `content`: 0 random, 1 smooth, 2 rows repeating every
/// `period` rows (matches at one distance only: the window's far end when period * row size
/// is 32768), 3 long runs.
Bytes filtered_data(std::size_t w, std::size_t h, int n, int content, std::size_t period, std::mt19937_64& rng) {
  const std::size_t row = w * std::size_t(n) + 1;
  Bytes f(h * row);
  for (std::size_t y = 0; y < h; ++y) {
    std::uint8_t* r = &f[y * row];
    if (content == 2 && y >= period) {
      std::memcpy(r, r - period * row, row);
      continue;
    }
    r[0] = static_cast<std::uint8_t>(rng() % 5);
    for (std::size_t x = 1; x < row; ++x)
      r[x] = static_cast<std::uint8_t>(content == 1 ? (x / 7 + y / 3) & 3 : content == 3 ? (x / 300 + y) % 2 * 9 : rng());
  }
  return f;
}

/// While alive, decode_gray and decode_rgb read every PNG with devmat's own decoder.
struct ForceOwnPng {
  ForceOwnPng() { detail::force_own_png_decoder(true); }
  ~ForceOwnPng() { detail::force_own_png_decoder(false); }
};

}  // namespace

TEST_CASE("image I/O is compiled in") { CHECK(image_io_available()); }

TEST_CASE("luma is 0.299 R + 0.587 G + 0.114 B, rounded to nearest") {
  CHECK(detail::luma(0, 0, 0) == 0);
  CHECK(detail::luma(255, 255, 255) == 255);
  CHECK(detail::luma(255, 0, 0) == 76);   // 76.245
  CHECK(detail::luma(0, 255, 0) == 150);  // 149.685
  CHECK(detail::luma(0, 0, 255) == 29);   // 29.07
  CHECK(detail::luma(10, 20, 30) == 18);  // 17.15
  long bad = 0;
  for (int r = 0; r < 256; r += 3)
    for (int g = 0; g < 256; ++g)
      for (int b = 0; b < 256; b += 5) {
        const double exact = 0.299 * r + 0.587 * g + 0.114 * b;
        const int got = detail::luma(std::uint8_t(r), std::uint8_t(g), std::uint8_t(b));
        if (std::fabs(got - exact) > 0.5 + 1e-9 || (r == g && g == b && got != r)) ++bad;
      }
  CHECK(bad == 0);
}

TEST_CASE("PNG, PGM and PPM round trips are exact on awkward sizes") {
  TempDir dir;
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {1, 7}, {7, 1}, {2, 3}, {17, 15}, {31, 33},
                                                       {64, 64}, {101, 103}, {3, 1021}, {257, 5}};
  for (auto [r, c] : shapes) {
    for (int ch : {1, 3}) {
      for (const char* ext : {".png", ".pgm", ".ppm", ".PNG"}) {
        const std::string path = dir / ("img" + std::string(ext));
        CAPTURE(test::shape(r, c), ch, ext);
        const HostImage img = random_image(r, c, ch);
        detail::encode_image(path, img);
        const HostImage gray = detail::decode_gray(path);
        const HostImage rgb = detail::decode_rgb(path);
        REQUIRE(gray.rows == r);
        REQUIRE(gray.cols == c);
        REQUIRE(gray.channels == 1);
        REQUIRE(rgb.channels == 3);
        REQUIRE(rgb.rows == r);
        const Bytes want_gray = ch == 1 ? img.pixels : luma_of(img);
        CHECK(gray.pixels == want_gray);
        const bool pgm = std::string(ext) == ".pgm";
        if (ch == 3 && !pgm) CHECK(rgb.pixels == img.pixels);   // colour kept
        else CHECK(rgb.pixels == replicate3(want_gray));         // gray file: equal channels
        const Bytes file = read_bytes(path);
        if (pgm) CHECK((file[0] == 'P' && file[1] == '5'));
        else if (std::string(ext) == ".ppm") CHECK((file[0] == 'P' && file[1] == '6'));
        else CHECK((file[0] == 0x89 && file[1] == 'P' && file[2] == 'N' && file[3] == 'G'));
        CHECK(dir.entries() == std::set<std::string>{"img" + std::string(ext)});  // no temporaries left
        fs::remove(path);
      }
    }
  }
}

TEST_CASE("PNGs in stored deflate blocks (the encoder of images past 2^30 bytes) read back exact") {
  // Sizes around the 65535-byte blocks and rows that straddle them; what encode_image writes
  // for images too large for stb_image_write's int buffers (it crashed past about 1.4e9 bytes).
  TempDir dir;
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {3, 1021}, {1, 65534}, {1, 65535}, {2, 65535},
                                                       {257, 255}, {300, 301}, {7, 40000}};
  for (auto [r, c] : shapes) {
    for (int ch : {1, 3}) {
      CAPTURE(test::shape(r, c), ch);
      const HostImage img = random_image(r, c, ch);
      const Bytes png = detail::encode_png_stored(img);
      const std::string path = dir / "stored.png";
      write_bytes(path, png);
      // Stored blocks: the file holds every filtered byte, and 5 bytes a block more.
      const std::size_t filtered = static_cast<std::size_t>(r) * (static_cast<std::size_t>(c) * ch + 1);
      CHECK(png.size() >= filtered + 5 * ((filtered + 65534) / 65535));
      const HostImage back = ch == 1 ? detail::decode_gray(path) : detail::decode_rgb(path);
      REQUIRE(back.rows == r);
      REQUIRE(back.cols == c);
      CHECK(back.pixels == img.pixels);
    }
  }
}

TEST_CASE("saving over an existing file replaces it whole") {
  TempDir dir;
  const std::string path = dir / "over.png";
  write_text(path, std::string(100000, 'x'));
  const HostImage img = random_image(9, 4, 1);
  detail::encode_image(path, img);
  CHECK(detail::decode_gray(path).pixels == img.pixels);
  CHECK(dir.entries() == std::set<std::string>{"over.png"});
}

TEST_CASE("the format is read from the contents, not from the name") {
  TempDir dir;
  const HostImage img = random_image(5, 6, 3);
  detail::encode_image(dir / "a.png", img);
  fs::rename(dir / "a.png", dir / "a.jpg.data");
  CHECK(detail::decode_rgb(dir / "a.jpg.data").pixels == img.pixels);
}

TEST_CASE("PGM/PPM variants: ASCII, comments, 16-bit, maxval other than 255") {
  TempDir dir;
  const std::string p = dir / "v.pgm";
  auto gray = [&](const std::string& text) {
    write_text(p, text);
    return detail::decode_gray(p);
  };
  HostImage g = gray("P2\n# a comment\n3 2\n255\n0 1 2\n253 254 255\n");
  CHECK(g.rows == 2);
  CHECK(g.cols == 3);
  CHECK(g.pixels == Bytes{0, 1, 2, 253, 254, 255});
  CHECK(gray("P2 3 1 15 0 7 15").pixels == Bytes{0, 119, 255});  // x * 255 / 15, rounded
  CHECK(gray("P2 2 1 1000 500 1000\n").pixels == Bytes{128, 255});  // 127.5 rounds up
  CHECK(gray(std::string("P5\n#c\n2 1\n65535\n") + std::string("\xFF\xFF\x80\x00", 4)).pixels == Bytes{255, 128});
  CHECK(gray(std::string("P5 3 1 3\n") + '\0' + '\1' + '\3').pixels == Bytes{0, 85, 255});
  write_text(p, "P3 2 1 255  10 20 30   255 0 0");
  CHECK(detail::decode_rgb(p).pixels == Bytes{10, 20, 30, 255, 0, 0});
  CHECK(detail::decode_gray(p).pixels == Bytes{18, 76});
  write_text(p, std::string("P6\n1 1\n# comment\n255\n") + "\x0A\x14\x1E");
  CHECK(detail::decode_rgb(p).pixels == Bytes{10, 20, 30});
}

TEST_CASE("BMP: 24- and 32-bit, bottom-up and top-down, 8-bit palette") {
  TempDir dir;
  const std::string p = dir / "b.bmp";
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 5}, {7, 2}, {16, 13}}) {
    CAPTURE(test::shape(r, c));
    const HostImage rgb = random_image(r, c, 3);
    for (int bpp : {24, 32})
      for (bool top_down : {false, true}) {
        CAPTURE(bpp, top_down);
        write_bytes(p, make_bmp(rgb, bpp, top_down));
        CHECK(detail::decode_rgb(p).pixels == rgb.pixels);
        CHECK(detail::decode_gray(p).pixels == luma_of(rgb));
      }
    const HostImage g = random_image(r, c, 1);
    write_bytes(p, make_bmp(g, 8, false));
    CHECK(detail::decode_gray(p).pixels == g.pixels);
  }
}

TEST_CASE("JPEG and PNG with alpha from another encoder") {
  TempDir dir;
  const std::string p = dir / "x";
  // JPEG 16x8: R = 16x, G = 32y, B = 128, quality 95: lossy, so within a few levels.
  write_bytes(p, Bytes(std::begin(kJpegRgb16x8), std::end(kJpegRgb16x8)));
  const HostImage rgb = detail::decode_rgb(p);
  REQUIRE(rgb.rows == 8);
  REQUIRE(rgb.cols == 16);
  const HostImage gray = detail::decode_gray(p);
  int worst = 0, worst_gray = 0;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x) {
      const int want[3] = {16 * x, 32 * y, 128};
      for (int k = 0; k < 3; ++k) worst = std::max(worst, std::abs(rgb.pixels[(y * 16 + x) * 3 + k] - want[k]));
      worst_gray = std::max(worst_gray, std::abs(gray.pixels[y * 16 + x] - luma_ref(want[0], want[1], want[2])));
    }
  CHECK(worst <= 12);
  CHECK(worst_gray <= 6);
  // RGBA 5x3: alpha is ignored.
  write_bytes(p, Bytes(std::begin(kPngRgba5x3), std::end(kPngRgba5x3)));
  const HostImage rgba = detail::decode_rgb(p);
  const HostImage rgba_gray = detail::decode_gray(p);
  REQUIRE(rgba.rows == 3);
  REQUIRE(rgba.cols == 5);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) {
      const int i = y * 5 + x;
      CHECK(rgba.pixels[3 * i] == 50 * x);
      CHECK(rgba.pixels[3 * i + 1] == 100 * y);
      CHECK(rgba.pixels[3 * i + 2] == 255 - 40 * x);
      CHECK(rgba_gray.pixels[i] == luma_ref(50 * x, 100 * y, 255 - 40 * x));
    }
  // Gray + alpha 4x2.
  write_bytes(p, Bytes(std::begin(kPngGrayAlpha4x2), std::end(kPngGrayAlpha4x2)));
  CHECK(detail::decode_gray(p).pixels == Bytes{0, 30, 60, 90, 100, 130, 160, 190});
  CHECK(detail::decode_rgb(p).pixels == replicate3(Bytes{0, 30, 60, 90, 100, 130, 160, 190}));
}

TEST_CASE("missing files, directories and empty files throw io_error naming the file") {
  TempDir dir;
  const std::string missing = dir / "missing.png";
  check_io_error([&] { detail::decode_gray(missing); }, missing, "No such file");
  check_io_error([&] { detail::decode_rgb(missing); }, missing, "No such file");
  // The public API decodes before it touches a device: no GPU needed to see the error.
  check_io_error([&] { load_gray(missing); }, missing, "No such file");
  check_io_error([&] { load_rgb(missing); }, missing, "No such file");
  check_io_error([&] { detail::decode_gray(dir.path.string()); }, dir.path.string(), "directory");
  check_io_error([&] { load_gray(dir.path.string()); }, dir.path.string(), "directory");
  const std::string empty = dir / "empty.png";
  write_text(empty, "");
  check_io_error([&] { detail::decode_gray(empty); }, empty, "empty");
}

TEST_CASE("devices, FIFOs and sockets are refused before any byte is read") {
  TempDir dir;
  // Endless: the loader used to read these until memory ran out.
  check_io_error([] { detail::decode_gray("/dev/zero"); }, "/dev/zero", "not a regular file (it is a character device)");
  check_io_error([] { detail::decode_rgb("/dev/urandom"); }, "/dev/urandom", "character device");
  check_io_error([] { load_gray("/dev/zero"); }, "/dev/zero", "character device");  // no device needed
  check_io_error([] { detail::decode_gray("/dev/null"); }, "/dev/null", "character device");
  check_io_error([&] { detail::decode_rgb(dir.path.string()); }, dir.path.string(), "(it is a directory)");

  // A FIFO with no writer: a blocking open would wait for one for ever. If the loader blocks,
  // a watchdog opens the FIFO for writing after 5 s, so the test fails instead of hanging.
  const std::string fifo = dir / "fifo.pgm";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    const auto start = std::chrono::steady_clock::now();
    while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(5))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!done) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  check_io_error([&] { detail::decode_gray(fifo); }, fifo, "not a regular file (it is a FIFO");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  watchdog.join();
  CHECK(seconds < 4.0);

  // A socket cannot even be opened; the message still says what it is.
  const std::string sock = dir / "s";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  REQUIRE(sock.size() < sizeof(addr.sun_path));
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  const int sfd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(sfd >= 0);
  const int bound = ::bind(sfd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  if (bound == 0) check_io_error([&] { detail::decode_gray(sock); }, sock, "(it is a socket)");
  ::close(sfd);
  REQUIRE(bound == 0);
}

TEST_CASE("a file longer than any valid image of its declared size is refused without reading it all") {
  TempDir dir;
  const std::string p = dir / "long";
  const std::uint64_t kGiB = std::uint64_t(1) << 30;
  // A valid 4x4 PGM, then 8 GiB of zeros (a sparse file: no disk space, but reading it all
  // would take 8 GiB of memory).
  const std::string pgm = std::string("P5\n4 4\n255\n") + std::string(16, '\x7f');
  write_text(p, pgm);
  CHECK(detail::decode_gray(p).pixels == Bytes(16, 0x7f));
  set_size(p, 8 * kGiB);
  const auto start = std::chrono::steady_clock::now();
  check_io_error([&] { detail::decode_gray(p); }, p, "larger than any valid PGM/PPM of 4x4 pixels can be");
  check_io_error([&] { load_rgb(p); }, p, "larger than any valid PGM/PPM of 4x4");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 5.0);

  // Plain-text PGM: generous room per sample, not unlimited.
  write_text(p, "P2 2 2 255 1 2 3 4" + std::string(1 << 20, ' '));
  check_io_error([&] { detail::decode_gray(p); }, p, "larger than any valid PGM/PPM of 2x2");

  // PNG, JPEG and BMP: the declared size's bound plus room for metadata (16 MiB), then 64 MiB.
  detail::encode_image(dir / "small.png", random_image(12, 10, 3));
  const Bytes png = read_bytes(dir / "small.png");
  const Bytes jpeg(std::begin(kJpegRgb16x8), std::end(kJpegRgb16x8));
  const Bytes bmp = make_bmp(random_image(3, 5, 3), 24, false);
  for (const auto& [name, bytes, declared] : {std::make_tuple("PNG", png, "PNG of 10x12 pixels"),
                                              std::make_tuple("JPEG", jpeg, "JPEG of 16x8 pixels"),
                                              std::make_tuple("BMP", bmp, "BMP of 5x3 pixels")}) {
    CAPTURE(name);
    write_bytes(p, bytes);
    CHECK_NOTHROW(detail::decode_gray(p));
    set_size(p, 64 << 20);
    check_io_error([&] { detail::decode_gray(p); }, p, std::string("larger than any valid ") + declared);
  }
  // A BMP's pixel array has an exact size: 1 MiB past it is too much.
  write_bytes(p, bmp);
  set_size(p, bmp.size() + (1 << 20));
  check_io_error([&] { detail::decode_gray(p); }, p, "larger than any valid BMP of 5x3");

  // A header that never gives the size: refused after 16 MiB.
  write_text(p, "P5\n# a comment that goes on and on");
  set_size(p, 64 << 20);
  check_io_error([&] { detail::decode_gray(p); }, p, "whose header gives no size within its first 16777216 bytes");
  write_bytes(p, with_app_segments(jpeg, 300));  // 19 MiB of APP15 before the frame header
  check_io_error([&] { detail::decode_gray(p); }, p, "larger than any valid image");
}

TEST_CASE("files within their size bound still load: trailers, long headers, aligned text") {
  TempDir dir;
  const std::string p = dir / "ok";
  // A trailing newline and a short trailer after the raster are ignored, as before.
  write_text(p, std::string("P5\n4 1\n255\n") + "\x01\x02\x03\x04" + "\n");
  CHECK(detail::decode_gray(p).pixels == Bytes{1, 2, 3, 4});
  write_text(p, std::string("P5\n4 1\n255\n") + "\x01\x02\x03\x04" + std::string(4000, '\0'));
  CHECK(detail::decode_gray(p).pixels == Bytes{1, 2, 3, 4});
  // A header comment longer than the first chunk read (64 KiB).
  write_text(p, "P5\n# " + std::string(200000, 'c') + "\n4 1\n65535\n" + std::string("\x00\x00\x01\x01\x80\x00\xff\xff", 8));
  CHECK(detail::decode_gray(p).pixels == Bytes{0, 1, 128, 255});
  // Plain text aligned in wide columns, with leading zeros.
  write_text(p, "P2\n3 2\n255\n    0000     1     2\n  253   254   255\n\n");
  CHECK(detail::decode_gray(p).pixels == Bytes{0, 1, 2, 253, 254, 255});
  // A PNG with 1 MiB after its IEND chunk.
  const HostImage img = random_image(12, 10, 3);
  detail::encode_image(dir / "t.png", img);
  Bytes png = read_bytes(dir / "t.png");
  png.resize(png.size() + (1 << 20), 0xAB);
  write_bytes(p, png);
  CHECK(detail::decode_rgb(p).pixels == img.pixels);
  // A JPEG whose frame header lies past 192 KiB of APP segments, and one followed by 8 MiB
  // (as a camera's motion photo appends its video).
  const Bytes jpeg(std::begin(kJpegRgb16x8), std::end(kJpegRgb16x8));
  write_bytes(p, jpeg);
  const HostImage want = detail::decode_rgb(p);
  write_bytes(p, with_app_segments(jpeg, 3));
  CHECK(detail::decode_rgb(p).pixels == want.pixels);
  write_bytes(p, jpeg);
  set_size(p, jpeg.size() + (8 << 20));
  CHECK(detail::decode_rgb(p).pixels == want.pixels);
  // A BMP with the 2 bytes of padding some writers append.
  const HostImage rgb = random_image(3, 5, 3);
  Bytes bmp = make_bmp(rgb, 24, true);
  bmp.insert(bmp.end(), {0, 0});
  write_bytes(p, bmp);
  CHECK(detail::decode_rgb(p).pixels == rgb.pixels);
}

TEST_CASE("files that are not images throw io_error") {
  TempDir dir;
  const std::string p = dir / "not-an-image.png";
  for (const std::string& text : {std::string("hello, world\n"), std::string("\x89PNX\r\n\x1a\nabcdefgh", 16),
                                  std::string("BZ not a bitmap"), std::string("\x00\x01\x02\x03", 4)}) {
    write_text(p, text);
    check_io_error([&] { detail::decode_gray(p); }, p, "not an image");
  }
  write_text(p, "GIF89a....");
  check_io_error([&] { detail::decode_gray(p); }, p, "GIF images are not supported");
  write_text(p, std::string("II*\0....", 8));
  check_io_error([&] { detail::decode_gray(p); }, p, "TIFF images are not supported");
  write_text(p, "P1\n2 2\n0 1 1 0\n");
  check_io_error([&] { detail::decode_gray(p); }, p, "not supported");
  std::vector<std::uint8_t> noise(4096);
  std::uniform_int_distribution<int> d(0, 255);
  for (auto& b : noise) b = static_cast<std::uint8_t>(d(test::rng()));
  noise[0] = 'x';
  write_bytes(p, noise);
  check_io_error([&] { detail::decode_rgb(p); }, p, "not an image");
}

TEST_CASE("truncated files throw io_error at every length") {
  TempDir dir;
  const HostImage rgb = random_image(7, 13, 3);
  const HostImage gray = random_image(9, 6, 1);
  std::vector<std::pair<std::string, Bytes>> files;
  detail::encode_image(dir / "t.png", rgb);
  files.emplace_back("PNG", read_bytes(dir / "t.png"));
  detail::encode_image(dir / "t.ppm", rgb);
  files.emplace_back("PPM", read_bytes(dir / "t.ppm"));
  detail::encode_image(dir / "t.pgm", gray);
  files.emplace_back("PGM", read_bytes(dir / "t.pgm"));
  // BMP rows without padding: the last row's padding is optional, so cutting it is no error.
  files.emplace_back("BMP 24", make_bmp(random_image(5, 12, 3), 24, false));
  files.emplace_back("BMP 8", make_bmp(random_image(5, 8, 1), 8, true));
  files.emplace_back("JPEG", Bytes(std::begin(kJpegRgb16x8), std::end(kJpegRgb16x8)));
  files.emplace_back("PNG (alpha)", Bytes(std::begin(kPngRgba5x3), std::end(kPngRgba5x3)));
  const std::string p = dir / "cut";
  for (const auto& [name, bytes] : files) {
    CAPTURE(name, bytes.size());
    write_bytes(p, bytes);
    CHECK_NOTHROW(detail::decode_gray(p));  // the whole file is fine
    for (std::size_t n = 1; n < bytes.size(); ++n) {
      CAPTURE(n);
      write_bytes(p, Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)));
      check_io_error([&] { detail::decode_gray(p); }, p, "truncated");
    }
  }
  // ASCII PGM: a missing sample (a number cut in its digits cannot be told from a short one).
  write_text(p, "P2 3 2 255 0 1 2 3 4");
  check_io_error([&] { detail::decode_gray(p); }, p, "truncated");
}

TEST_CASE("corrupt files throw io_error") {
  TempDir dir;
  const std::string p = dir / "bad";
  detail::encode_image(dir / "ok.png", random_image(12, 10, 1));
  Bytes png = read_bytes(dir / "ok.png");
  Bytes flipped = png;
  flipped[45] ^= 0x10;  // inside IDAT (IHDR ends at byte 33)
  write_bytes(p, flipped);
  check_io_error([&] { detail::decode_gray(p); }, p, "CRC mismatch");
  // Width 0 in IHDR with a correct CRC: the decoder itself refuses it.
  Bytes zero_width = png;
  for (int i = 16; i < 20; ++i) zero_width[i] = 0;
  const std::uint32_t crc = crc32_ref(&zero_width[12], 17);
  for (int k = 0; k < 4; ++k) zero_width[29 + k] = static_cast<std::uint8_t>(crc >> (24 - 8 * k));
  write_bytes(p, zero_width);
  check_io_error([&] { detail::decode_gray(p); }, p, "corrupt");
  write_bytes(p, Bytes{0xFF, 0xD8, 0xFF, 0xD9});  // a JPEG with no frame
  check_io_error([&] { detail::decode_gray(p); }, p, "corrupt");
  write_text(p, "P2 2 1 10 5 11");  // a sample above maxval
  check_io_error([&] { detail::decode_gray(p); }, p, "corrupt");
  write_text(p, "P5 0 3 255\n");
  check_io_error([&] { detail::decode_gray(p); }, p, "corrupt");
  write_text(p, "P5 x 3 255\n");
  check_io_error([&] { detail::decode_gray(p); }, p, "corrupt");
}

TEST_CASE("unsupported extensions and empty images: io_error, nothing written") {
  TempDir dir;
  const HostImage img = random_image(4, 4, 3);
  for (const char* name : {"x.jpg", "x.bmp", "x.tiff", "x", "x.png.bak", "dir.png/x"}) {
    const std::string path = dir / name;
    check_io_error([&] { detail::encode_image(path, img); }, path, "extension");
  }
  check_io_error([&] { save_image(dir / "x.jpg", Image8()); }, dir / "x.jpg", "unsupported extension '.jpg'");
  check_io_error([&] { save_image(dir / "x.gif", Rgb8()); }, dir / "x.gif", "unsupported extension '.gif'");
  check_io_error([&] { save_image(dir / "e.png", Image8()); }, dir / "e.png", "empty");
  check_io_error([&] { save_image(dir / "e.ppm", Rgb8()); }, dir / "e.ppm", "empty");
  HostImage empty;
  empty.channels = 1;
  check_io_error([&] { detail::encode_image(dir / "e.pgm", empty); }, dir / "e.pgm", "empty");
  // Planes of different shapes are a shape_error (checked before any device work).
  Rgb8 mixed = {Image8(0, 3), Image8(0, 4), Image8(0, 3)};
  CHECK_THROWS_AS(save_image(dir / "m.png", mixed), shape_error);
  CHECK(dir.entries().empty());
}

TEST_CASE("failed writes throw io_error and leave the destination as it was") {
  TempDir dir;
  const HostImage img = random_image(6, 5, 1);
  const std::string in_missing = dir / "no-such-folder/x.png";
  check_io_error([&] { detail::encode_image(in_missing, img); }, in_missing, "No such file");
  // The destination is a directory: not replaced, no temporary left.
  fs::create_directory(dir / "taken.png");
  check_io_error([&] { detail::encode_image(dir / "taken.png", img); }, dir / "taken.png", "cannot replace");
  CHECK(fs::is_directory(dir / "taken.png"));
  CHECK(dir.entries() == std::set<std::string>{"taken.png"});
  // An existing file survives a failed save untouched.
  const std::string keep = dir / "keep.png";
  write_text(keep, "old contents");
  HostImage empty;
  empty.channels = 1;
  CHECK_THROWS_AS(detail::encode_image(keep, empty), io_error);
  CHECK(read_bytes(keep) == Bytes{'o', 'l', 'd', ' ', 'c', 'o', 'n', 't', 'e', 'n', 't', 's'});
  // A folder we may not write to (root ignores permissions, so only as another user).
  if (::geteuid() != 0) {
    fs::create_directory(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    check_io_error([&] { detail::encode_image(dir / "ro/x.png", img); }, dir / "ro/x.png", "Permission denied");
    fs::permissions(dir / "ro", fs::perms::owner_all);
    CHECK(fs::is_empty(dir / "ro"));
  } else {
    WARN("running as root, which ignores folder permissions: a write into a read-only folder is not checked");
  }
  std::set<std::string> left = dir.entries();
  left.erase("ro");
  CHECK(left == std::set<std::string>{"taken.png", "keep.png"});
}

// ---------------------------------------------------------------- devmat's own PNG decoder
TEST_CASE("own PNG decoder: stb_image_write's PNGs (fixed Huffman, each filter) decode as stb_image does") {
  const std::vector<std::pair<Index, Index>> shapes = {{1, 1}, {1, 9}, {9, 1}, {2, 3}, {17, 15}, {64, 65}, {5, 1000}, {300, 301}};
  std::size_t files = 0;
  for (auto [r, c] : shapes)
    for (int ch = 1; ch <= 4; ++ch)
      for (int smooth = 0; smooth < 2; ++smooth) {
        HostImage img = random_image(r, c, ch);
        if (smooth)
          for (std::size_t i = 0; i < img.pixels.size(); ++i)
            img.pixels[i] = static_cast<std::uint8_t>((i / std::size_t(ch) % std::size_t(c)) / 3 + i / std::size_t(c * ch) * 2 + i % std::size_t(ch) * 50);
        for (int filter = -1; filter <= 4; ++filter)
          for (int level : {1, 8}) {
            CAPTURE(test::shape(r, c), ch, smooth, filter, level);
            stbi_write_force_png_filter = filter;  // -1: stb's choice per row
            stbi_write_png_compression_level = level;
            int len = 0;
            unsigned char* out = stbi_write_png_to_mem(img.pixels.data(), int(c) * ch, int(c), int(r), ch, &len);
            REQUIRE(out != nullptr);
            const Bytes png(out, out + len);
            STBIW_FREE(out);
            check_same_as_stb(png);
            const HostImage own = detail::decode_png_own("mem.png", png);
            CHECK(own.pixels == img.pixels);
            ++files;
          }
      }
  stbi_write_force_png_filter = -1;
  stbi_write_png_compression_level = 8;
  CHECK(files == 8 * 4 * 2 * 6 * 2);
}

TEST_CASE("own PNG decoder: stored, fixed and dynamic Huffman blocks, mixed, in many IDAT chunks") {
  auto& rng = test::rng();
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{1, 1}, {2, 1}, {1, 40}, {31, 17}, {100, 99}, {301, 300}};
  int streams = 0;
  for (auto [h, w] : shapes)
    for (int ch = 1; ch <= 4; ++ch)
      for (int content : {0, 1, 3})
        for (int mix = 0; mix < 4; ++mix) {
          CAPTURE(h, w, ch, content, mix);
          const Bytes data = filtered_data(w, h, ch, content, 0, rng);
          const Bytes z = TestDeflater(data).zlib(TestDeflater::Mix(mix), rng);
          std::vector<std::size_t> idat;  // chunk sizes from 0 (empty chunks) up
          for (std::size_t left = z.size(); left > 0;) {
            const std::size_t k = std::min<std::size_t>(left, rng() % 3 == 0 ? rng() % 3 : rng() % 20000);
            idat.push_back(k), left -= k;
          }
          const int color = ch == 1 ? 0 : ch == 2 ? 4 : ch == 3 ? 2 : 6;
          check_same_as_stb(make_png(std::uint32_t(w), std::uint32_t(h), 8, color, z, idat));
          ++streams;
        }
  CHECK(streams == 6 * 4 * 3 * 4);
  // Matches at the window's far end (32768 = 128 rows of 256 bytes) and long runs of the
  // longest match (258), in each kind of block; and repeats just out of its reach.
  for (const auto& [w, period] : std::vector<std::pair<std::size_t, std::size_t>>{{255, 128}, {127, 256}, {254, 129}}) {
    const Bytes data = filtered_data(w, 700, 1, 2, period, rng);
    for (int mix = 1; mix < 4; ++mix) {
      CAPTURE(w, period, mix);
      const Bytes z = TestDeflater(data).zlib(TestDeflater::Mix(mix), rng);
      if (mix < 3) CHECK((z.size() < data.size() / 2) == (period * (w + 1) <= 32768));  // the repeats in reach found
      check_same_as_stb(make_png(std::uint32_t(w), 700, 8, 0, z, {1, 2, 3, 4, 1000}));
    }
  }
}

TEST_CASE("own PNG decoder: stored-block PNGs and the load path with it forced") {
  TempDir dir;
  const std::string p = dir / "x.png";
  ForceOwnPng force;
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {3, 1021}, {2, 65535}, {300, 301}})
    for (int ch : {1, 3}) {
      CAPTURE(test::shape(r, c), ch);
      const HostImage img = random_image(r, c, ch);
      const Bytes png = detail::encode_png_stored(img);
      check_same_as_stb(png);
      write_bytes(p, png);
      CHECK(detail::decode_gray(p).pixels == (ch == 1 ? img.pixels : luma_of(img)));
      CHECK(detail::decode_rgb(p).pixels == (ch == 3 ? img.pixels : replicate3(img.pixels)));
    }
  // Alpha is dropped as on the stb path.
  write_bytes(p, Bytes(std::begin(kPngGrayAlpha4x2), std::end(kPngGrayAlpha4x2)));
  CHECK(detail::decode_gray(p).pixels == Bytes{0, 30, 60, 90, 100, 130, 160, 190});
  write_bytes(p, Bytes(std::begin(kPngRgba5x3), std::end(kPngRgba5x3)));
  CHECK(detail::decode_rgb(p).rows == 3);
  // Truncated at every length: io_error, as through stb.
  detail::encode_image(dir / "t.png", random_image(7, 13, 3));
  const Bytes whole = read_bytes(dir / "t.png");
  for (std::size_t n = 1; n < whole.size(); ++n) {
    CAPTURE(n);
    write_bytes(p, Bytes(whole.begin(), whole.begin() + std::ptrdiff_t(n)));
    check_io_error([&] { detail::decode_gray(p); }, p, "truncated");
  }
}

TEST_CASE("own PNG decoder: every malformed stream is an io_error naming the file") {
  auto& rng = test::rng();
  const std::string path = "bad.png";
  const auto fails = [&](const Bytes& png, const std::string& reason) {
    check_io_error([&] { detail::decode_png_own(path, png); }, path, reason);
  };
  // A 20x10 gray image in dynamic blocks (and its parts to break).
  const Bytes data = filtered_data(20, 10, 1, 1, 0, rng);
  const Bytes z = TestDeflater(data).zlib(TestDeflater::dynamic_only, rng);
  REQUIRE_NOTHROW(detail::decode_png_own(path, make_png(20, 10, 8, 0, z)));
  const auto with = [&](std::size_t i, std::uint8_t v) {
    Bytes b = z;
    b[i] = v;
    return make_png(20, 10, 8, 0, b);
  };
  // The zlib header.
  fails(with(0, 0x79), "not deflate");                   // CM 9
  fails(with(0, 0x88), "not deflate");                   // a 64 KiB window
  fails(with(1, 0xDB), "header check");                  // FCHECK
  fails(with(1, 0x20), "dictionary");                     // FDICT, FCHECK right: 0x7820 % 31 == 0
  // Truncated zlib streams, each in a valid PNG: every length.
  for (std::size_t n = 0; n < z.size(); ++n) {
    CAPTURE(n);
    fails(make_png(20, 10, 8, 0, Bytes(z.begin(), z.begin() + std::ptrdiff_t(n))), "corrupt PNG");
  }
  // Adler-32, and any flipped bit: an io_error or (rarely: a flip in a match can be harmless) the
  // right size, never a crash.
  fails(with(z.size() - 1, z.back() ^ 1), "Adler-32");
  int threw = 0;
  for (std::size_t i = 2; i < z.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      try {
        const HostImage img = detail::decode_png_own(path, with(i, static_cast<std::uint8_t>(z[i] ^ (1 << bit))));
        CHECK(img.pixels.size() == 200);
      } catch (const io_error& e) {
        ++threw;
        CHECK_THAT(std::string(e.what()), test::contains(path));
      }
    }
  CHECK(threw > int(z.size()) * 6);  // nearly every flip is caught
  // Blocks built bit by bit.
  const auto stream = [](const std::function<void(BitWriter&)>& body) {
    BitWriter w;
    w.put(0x78, 8), w.put(0x01, 8);
    body(w);
    w.align();
    w.put(0, 32);  // an Adler-32 (never reached)
    return w.out;
  };
  const auto fixed = [&](BitWriter& w) { w.put(1, 1), w.put(1, 2); };
  fails(make_png(4, 1, 8, 0, stream([](BitWriter& w) { w.put(1, 1), w.put(3, 2); })), "reserved type 3");
  fails(make_png(4, 1, 8, 0, stream([](BitWriter& w) {
          w.put(1, 1), w.put(0, 2), w.align(), w.put(5, 16), w.put(0xFFFF ^ 6, 16);
        })), "complement");
  fails(make_png(4, 1, 8, 0, stream([&](BitWriter& w) {  // a match 2 back after 1 byte
          fixed(w), fixed_lit().put(w, 0), fixed_lit().put(w, 257), fixed_dist().put(w, 1);
        })), "before the start");
  fails(make_png(4, 1, 8, 0, stream([&](BitWriter& w) { fixed(w), fixed_lit().put(w, 0), fixed_lit().put(w, 286); })),
        "reserved symbols 286-287");
  fails(make_png(4, 1, 8, 0, stream([&](BitWriter& w) {
          fixed(w), fixed_lit().put(w, 0), fixed_lit().put(w, 257), fixed_dist().put(w, 30);
        })), "reserved symbols 30-31");
  fails(make_png(4, 1, 8, 0, stream([&](BitWriter& w) {  // a filter type 5
          fixed(w);
          for (int v : {5, 1, 2, 3, 4}) fixed_lit().put(w, v);
          fixed_lit().put(w, 256);
        })), "filter type");
  fails(make_png(4, 1, 8, 0, stream([&](BitWriter& w) {  // 6 bytes for 5
          fixed(w);
          for (int v : {0, 1, 2, 3, 4, 5}) fixed_lit().put(w, v);
          fixed_lit().put(w, 256);
        })), "longer than the image");
  fails(make_png(4, 2, 8, 0, stream([&](BitWriter& w) {  // 5 bytes for 10
          fixed(w);
          for (int v : {0, 1, 2, 3, 4}) fixed_lit().put(w, v);
          fixed_lit().put(w, 256);
        })), "before the last row");
  // Dynamic headers: too many codes, over-subscribed and incomplete codes, a repeat of nothing,
  // lengths past their count, no end-of-block code.
  const auto dynamic = [&](int hlit, int hdist, const std::vector<int>& cl, const std::function<void(BitWriter&)>& rest) {
    return make_png(4, 1, 8, 0, stream([&](BitWriter& w) {
      w.put(1, 1), w.put(2, 2), w.put(std::uint32_t(hlit - 257), 5), w.put(std::uint32_t(hdist - 1), 5), w.put(15, 4);
      static const int kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
      for (int i = 0; i < 19; ++i) w.put(std::uint32_t(cl[std::size_t(kOrder[i])]), 3);
      rest(w);
    }));
  };
  std::vector<int> cl(19, 0);
  cl[0] = cl[8] = cl[17] = cl[18] = 2;  // a complete code-length code: 0, 8, 17, 18 in 2 bits
  const Code clc(cl);
  fails(dynamic(287, 1, cl, [](BitWriter&) {}), "too many codes");
  std::vector<int> over = cl;
  over[1] = 2;
  fails(dynamic(257, 1, over, [](BitWriter&) {}), "code-length code");
  std::vector<int> incomplete(19, 0);
  incomplete[0] = 2, incomplete[8] = 2, incomplete[18] = 2;
  fails(dynamic(257, 1, incomplete, [](BitWriter&) {}), "code-length code");
  std::vector<int> with16 = cl;
  with16[16] = 3, with16[17] = 3, with16[18] = 3, with16[1] = 3, with16[0] = 2, with16[8] = 2;  // 2+2+3*4 = complete
  fails(dynamic(257, 1, with16, [&](BitWriter& w) { Code(with16).put(w, 16), w.put(0, 2); }), "repeats nothing");
  fails(dynamic(257, 1, cl, [&](BitWriter& w) {  // 258 lengths for 257 + 1
          clc.put(w, 18), w.put(127, 7), clc.put(w, 18), w.put(127, 7), clc.put(w, 17), w.put(7, 3);
        }), "past their count");
  fails(dynamic(257, 1, cl, [&](BitWriter& w) {  // all 258 zero: no end-of-block code
          clc.put(w, 18), w.put(127, 7), clc.put(w, 18), w.put(120 - 11, 7);
        }), "end-of-block");
  fails(dynamic(257, 1, cl, [&](BitWriter& w) {  // 256 of length 8 and the end-of-block: over-subscribed
          clc.put(w, 8);
          for (int i = 0; i < 256; ++i) clc.put(w, 8);
          clc.put(w, 0);
        }), "literal/length");
  fails(dynamic(257, 2, cl, [&](BitWriter& w) {  // 0 of length 8, 256 of 8: incomplete
          clc.put(w, 8), clc.put(w, 18), w.put(138 - 11, 7), clc.put(w, 18), w.put(117 - 11, 7);
          clc.put(w, 8), clc.put(w, 0), clc.put(w, 0);
        }), "literal/length");
  // The PNG around the stream: a bad CRC, no IDAT, bad IHDR fields, large kinds it does not read.
  Bytes good = make_png(20, 10, 8, 0, z);
  Bytes bad_crc = good;
  bad_crc[33 + 10] ^= 4;  // inside the IDAT data
  fails(bad_crc, "CRC mismatch");
  Bytes no_idat(good.begin(), good.begin() + 33);  // the signature and IHDR
  add_chunk(no_idat, "IEND", {});
  fails(no_idat, "no IDAT");
  fails(make_png(0, 10, 8, 0, z), "corrupt PNG (size");
  fails(make_png(0x80000000u, 1, 8, 0, z), "corrupt PNG (size");
  fails(make_png(20, 10, 8, 1, z), "bad IHDR");
  fails(make_png(20, 10, 16, 3, z), "bad IHDR");
  fails(make_png(20, 10, 8, 0, z, {}, 2), "bad IHDR");
  fails(make_png(20, 10, 16, 0, z), "reads only 8-bit");
  fails(make_png(20, 10, 8, 3, z), "reads only 8-bit");
  fails(make_png(20, 10, 1, 0, z), "reads only 8-bit");
  fails(make_png(20, 10, 8, 0, z, {}, 1), "reads only 8-bit");
  fails(make_png(100000, 100000, 8, 6, z), "cannot hold");  // 40 GB declared in 100 bytes
}

TEST_CASE("PNGs too large for stb_image go to devmat's decoder without forcing it") {
  // A side over stb's 2^24 (and for the 16-bit kind, which only stb reads, a clear refusal).
  TempDir dir;
  const std::string p = dir / "wide.png";
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, (Index(1) << 24) + 1}, {(Index(1) << 24) + 3, 1}}) {
    CAPTURE(test::shape(r, c));
    HostImage img;
    img.rows = r, img.cols = c, img.channels = 1;
    img.pixels.resize(std::size_t(r * c));
    for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 7 + i / 1000);
    write_bytes(p, detail::encode_png_stored(img));
    CHECK(stb_decode(read_bytes(p)).channels == 0);  // stb refuses it
    const HostImage back = detail::decode_gray(p);
    CHECK(back.rows == r);
    CHECK(back.cols == c);
    CHECK(back.pixels == img.pixels);
  }
  const std::uint32_t w = (1u << 24) + 1;
  Bytes zeros(2 * std::size_t(w) + 1, 0);  // a 16-bit gray row
  write_bytes(p, make_png(w, 1, 16, 0, TestDeflater(zeros).zlib(TestDeflater::fixed_only, test::rng())));
  check_io_error([&] { detail::decode_gray(p); }, p, "16-bit gray) is too large for stb_image");
}

TEST_CASE("a PNG past 2^31 bytes of pixels saves and loads (DEVMAT_TEST_LARGE_PNG=1; about 8 GB of memory)") {
  if (!std::getenv("DEVMAT_TEST_LARGE_PNG")) {
    WARN("skipped: set DEVMAT_TEST_LARGE_PNG=1 to save and load a 50000x50000 gray PNG (2.5e9 bytes)");
    return;
  }
  TempDir dir;
  const std::string p = dir / "large.png";
  const Index n = 50000;
  const std::uint64_t bytes = std::uint64_t(n) * n;  // 2.5e9: past stb's int sizes
  {
    std::vector<std::uint8_t> px(bytes);
    for (std::uint64_t i = 0; i < bytes; ++i) px[i] = static_cast<std::uint8_t>(i * 2654435761u >> 13);
    write_image(p, px.data(), n, n, 1);
  }
  std::vector<std::uint8_t> back;
  const auto t0 = std::chrono::steady_clock::now();
  const ImageShape s = read_image(p, 1, back);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("read_image of " << bytes << " bytes: " << secs << " s");
  REQUIRE(s.rows == n);
  REQUIRE(s.cols == n);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < bytes; ++i) wrong += back[i] != static_cast<std::uint8_t>(i * 2654435761u >> 13);
  CHECK(wrong == 0);
}
