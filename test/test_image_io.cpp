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

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

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
  const std::uint32_t crc = [&] {
    std::uint32_t c = 0xFFFFFFFFu;
    for (int i = 12; i < 29; ++i) {
      c ^= zero_width[i];
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
  }();
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
