// Image I/O (compiled only when stb_image.h was found; image_io_disabled.cpp otherwise).
//
// Reading: only a regular file is read (never a device or a FIFO), its header first and never
// past the largest size a valid image of the declared size could have (see "reading the
// bytes"); its format is recognised by its first bytes (never by its name), and its structure
// is checked before any pixel is decoded, because stb_image silently pads a truncated BMP or
// JPEG with zeros:
//   PNG   every chunk must fit in the file (critical chunks with a correct CRC) up to IEND;
//   JPEG  the marker segments and entropy-coded data must reach an end-of-image marker;
//   BMP   the header must be whole and the pixel array must fit in the file;
//   PGM/PPM are parsed here (P2, P3, P5, P6, maxval up to 65535): stb's reader neither checks
//         truncation nor rescales maxval != 255.
// PNG, JPEG and BMP pixels are then decoded by stb_image. Gray output is luma computed here
// (0.299 R + 0.587 G + 0.114 B, rounded), not stb's own approximation.
//
// Writing: PNG through stb_image_write, PGM/PPM here; the file is encoded in memory, written to
// a temporary file in the destination folder and renamed over the destination, so a failure
// leaves the destination untouched and no temporary behind.
//
// stb is compiled into this file with static linkage, so libdevmat exports none of its
// symbols and cannot clash with a user's own copy.
#include "detail/image_codec.hpp"

#include <devmat/device_matrix.hpp>
#include <devmat/error.hpp>
#include <devmat/image.hpp>

#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace devmat {
namespace detail {
namespace {

// Largest side accepted on reading (as stb_image's own limit).
constexpr Index kMaxSide = Index(1) << 24;

[[noreturn]] void read_fail(const std::string& path, const std::string& why) {
  throw io_error("devmat: cannot read image '" + path + "': " + why);
}

[[noreturn]] void write_fail(const std::string& path, const std::string& why) {
  throw io_error("devmat: cannot write image '" + path + "': " + why);
}

std::string errno_text(int e) { return std::strerror(e); }

// ------------------------------------------------------------------ recognising the format
enum class Format { png, jpeg, bmp, pnm };

const char* format_name(Format f) {
  switch (f) {
    case Format::png: return "PNG";
    case Format::jpeg: return "JPEG";
    case Format::bmp: return "BMP";
    case Format::pnm: return "PGM/PPM";
  }
  return "?";
}

constexpr std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

bool starts_with(const std::vector<std::uint8_t>& b, const std::uint8_t* sig, std::size_t n) {
  return b.size() >= n && std::memcmp(b.data(), sig, n) == 0;
}

Format recognise(const std::string& path, const std::vector<std::uint8_t>& b) {
  static const std::uint8_t jpeg[3] = {0xFF, 0xD8, 0xFF};
  if (starts_with(b, kPngSignature, 8)) return Format::png;
  if (starts_with(b, jpeg, 3)) return Format::jpeg;
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return Format::bmp;
  if (b.size() >= 2 && b[0] == 'P' && (b[1] == '2' || b[1] == '3' || b[1] == '5' || b[1] == '6')) return Format::pnm;
  // A file shorter than a signature it begins with was cut off inside the signature.
  const std::size_t n = b.size();
  if ((n < 8 && std::memcmp(b.data(), kPngSignature, n) == 0) || (n < 3 && std::memcmp(b.data(), jpeg, n) == 0) ||
      (n < 2 && (b[0] == 'B' || b[0] == 'P')))
    read_fail(path, "the file is truncated (" + std::to_string(n) + " bytes, inside the format's signature)");
  // Other images get a precise reason.
  const auto is = [&](const char* s) { return starts_with(b, reinterpret_cast<const std::uint8_t*>(s), std::strlen(s)); };
  static const std::uint8_t tiff_le[4] = {'I', 'I', 42, 0}, tiff_be[4] = {'M', 'M', 0, 42};
  const char* other = nullptr;
  if (is("P1") || is("P4")) other = "PBM bitmaps (P1/P4)";
  else if (is("GIF8")) other = "GIF images";
  else if (starts_with(b, tiff_le, 4) || starts_with(b, tiff_be, 4)) other = "TIFF images";
  else if (is("RIFF") && b.size() >= 12 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) other = "WebP images";
  if (other) read_fail(path, std::string(other) + " are not supported (supported: PNG, JPEG, BMP, PGM/PPM)");
  read_fail(path, "not an image: the contents are not PNG, JPEG, BMP or PGM/PPM");
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}
std::uint32_t le32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}
std::uint16_t le16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

// ------------------------------------------------------------------ reading the bytes
// A file is read in chunks, its header first, and never past the size that the header allows:
// a device, a FIFO, an endless or growing file, or a small image followed by gigabytes of
// anything, is refused after reading at most that bound plus one byte. The file's st_size is
// only a hint for the first allocation (a file can grow while it is read).
//
// The bounds, from the declared width w, height h and samples per pixel:
//   PGM/PPM  binary: the header, then exactly w * h * channels samples of 1 or 2 bytes; plain
//            text: kMaxPlainSampleChars per sample (five digits of a 16-bit sample, leading
//            zeros and the spaces and line ends that align columns). Comments are allowed in
//            the header only (as the Netpbm specification says).
//   BMP      the pixel array's offset plus rows of ceil(w * bpp / 32) * 4 bytes (RLE: at most
//            4 bytes a pixel, every escape included), or the end of a V5 header's embedded
//            colour profile if that lies further.
//   PNG      the unfiltered data, h rows of ceil(w * bits per pixel / 8) bytes plus a filter
//            byte, with 14 bytes a row of room for the Adam7 passes' extra filter bytes and
//            rounding; deflated it grows by at most 1/8 (stb_image_write's fixed Huffman
//            codes spend 9 bits on a byte; stored blocks add 5 bytes per 64 KiB, IDAT chunk
//            headers 12 bytes each), so the bound allows 1/4.
//   JPEG     16 bytes per sample on the frame rounded up to 32 pixels each way: a baseline
//            block costs at most about 209 bytes (63 AC codes of 16 + 10 bits and a DC of
//            16 + 11), doubled when every byte is an FF that needs stuffing, about 6.5 bytes a
//            sample, and progressive refinement scans add at most about 3.3 more.
//   PNG and JPEG then get kMetadataRoom for metadata (ICC profiles, EXIF, text chunks, APPn
//   segments, a trailer some cameras append), and the four formats kTrailerRoom for a short
//   trailer (a final newline, a BMP writer's padding). A header that does not give the size
//   within kMetadataRoom bytes allows kMetadataRoom in all. stb_image takes the file's size as
//   an int, so a PNG, JPEG or BMP is also capped at INT_MAX bytes. Frames of an animated PNG
//   beyond the default image count against the metadata room.
constexpr std::size_t kReadChunk = std::size_t(1) << 16;
constexpr std::size_t kSniffBytes = 16;  // enough to recognise every format (WebP: 12)
constexpr std::size_t kMetadataRoom = std::size_t(16) << 20;
constexpr std::size_t kTrailerRoom = 4096;
constexpr std::uint64_t kMaxPlainSampleChars = 32;
constexpr std::uint64_t kMaxStbFileBytes = INT_MAX;

std::uint64_t add_sat(std::uint64_t a, std::uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
std::uint64_t mul_sat(std::uint64_t a, std::uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

// What the bytes read so far say about the file's largest valid size.
struct SizeBound {
  enum State { need_more, known, not_image } state = need_more;
  std::uint64_t bytes = 0;     // when known: no valid file is longer
  std::string declared;        // the declared size and format, for the error message
};

SizeBound bound_of(std::uint64_t bytes, std::string declared) {
  return {SizeBound::known, bytes, std::move(declared)};
}
// The header is malformed or does not give the size: the validators will say what is wrong,
// as long as the file is no longer than kMetadataRoom.
SizeBound unsized(const char* format) {
  return bound_of(kMetadataRoom, std::string(format) + " whose header gives no valid size");
}
std::string dims(std::uint64_t w, std::uint64_t h) { return std::to_string(w) + "x" + std::to_string(h) + " pixels"; }

SizeBound png_bound(const std::vector<std::uint8_t>& b) {
  if (b.size() < 26) return {};  // signature, IHDR length and name, width, height, depth, colour
  if (be32(&b[8]) != 13 || std::memcmp(&b[12], "IHDR", 4) != 0) return unsized("PNG");
  const std::uint64_t w = std::min<std::uint64_t>(be32(&b[16]), kMaxSide);
  const std::uint64_t h = std::min<std::uint64_t>(be32(&b[20]), kMaxSide);
  const int depth = std::clamp<int>(b[24], 1, 16);
  const int channels = b[25] == 0 || b[25] == 3 ? 1 : b[25] == 2 ? 3 : b[25] == 4 ? 2 : 4;
  const std::uint64_t row = (w * static_cast<std::uint64_t>(channels * depth) + 7) / 8 + 14;
  const std::uint64_t raw = mul_sat(h, row);
  std::uint64_t n = add_sat(add_sat(raw, raw / 4), add_sat(kMetadataRoom, kTrailerRoom));
  return bound_of(std::min(n, kMaxStbFileBytes), "PNG of " + dims(w, h));
}

SizeBound jpeg_bound(const std::vector<std::uint8_t>& b) {
  // Marker segments up to the frame header (SOFn); the file is the SOI marker's bytes on.
  std::size_t pos = 2;
  const std::size_t n = b.size();
  for (;;) {
    while (pos < n && b[pos] != 0xFF) ++pos;
    while (pos < n && b[pos] == 0xFF) ++pos;
    if (pos >= n) return {};
    const std::uint8_t m = b[pos++];
    if (m == 0xD9 || m == 0xDA) return unsized("JPEG");  // end of image or a scan before any frame
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;
    if (n - pos < 2) return {};
    const std::size_t len = (std::size_t(b[pos]) << 8) | b[pos + 1];
    const bool frame = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (!frame) {
      if (len < 2) return unsized("JPEG");
      pos += len;
      continue;
    }
    if (n - pos < 8) return {};  // length, precision, height, width, components
    const std::uint64_t h = (std::uint64_t(b[pos + 3]) << 8) | b[pos + 4];
    const std::uint64_t w = (std::uint64_t(b[pos + 5]) << 8) | b[pos + 6];
    const std::uint64_t c = std::clamp<int>(b[pos + 7], 1, 4);
    if (w == 0 || h == 0) return unsized("JPEG");
    const std::uint64_t samples = (w + 32) * (h + 32) * c;
    const std::uint64_t bound = 16 * samples + kMetadataRoom + kTrailerRoom;
    return bound_of(std::min(bound, kMaxStbFileBytes), "JPEG of " + dims(w, h));
  }
}

SizeBound bmp_bound(const std::vector<std::uint8_t>& b) {
  if (b.size() < 18) return {};
  const std::uint64_t offset = le32(&b[10]);
  const std::uint32_t header = le32(&b[14]);
  std::uint64_t w = 0, h = 0, bpp = 0, compression = 0, profile_end = 0;
  if (header == 12) {
    if (b.size() < 26) return {};
    w = le16(&b[18]), h = le16(&b[20]), bpp = le16(&b[24]);
  } else if (header >= 40) {
    if (b.size() < 14 + std::min<std::size_t>(header, 124)) return {};
    const std::int64_t sw = static_cast<std::int32_t>(le32(&b[18]));
    const std::int64_t sh = static_cast<std::int32_t>(le32(&b[22]));
    if (sw <= 0 || sh == 0) return unsized("BMP");
    w = static_cast<std::uint64_t>(std::min<std::int64_t>(sw, kMaxSide));
    h = static_cast<std::uint64_t>(std::min<std::int64_t>(sh < 0 ? -sh : sh, kMaxSide));
    bpp = le16(&b[28]);
    compression = le32(&b[30]);
    if (header >= 124)  // BITMAPV5HEADER: profile offset (from the header's start) and size
      profile_end = add_sat(14 + std::uint64_t(le32(&b[14 + 112])), le32(&b[14 + 116]));
  } else {
    return unsized("BMP");
  }
  const bool rle = compression == 1 || compression == 2;
  const std::uint64_t pixels =
      rle ? mul_sat(4, mul_sat(w + 1, h + 1)) : mul_sat(h, mul_sat(add_sat(mul_sat(w, bpp), 31) / 32, 4));
  const std::uint64_t bound = add_sat(std::max(add_sat(offset, pixels), profile_end), kTrailerRoom);
  return bound_of(std::min(bound, kMaxStbFileBytes), "BMP of " + dims(w, h));
}

// The header of a PGM/PPM: magic, width, height, maximum value (comments allowed between
// them), and for the binary kinds the single whitespace byte before the raster.
SizeBound pnm_bound(const std::vector<std::uint8_t>& b, bool eof) {
  std::size_t pos = 2;
  std::uint64_t v[3] = {};
  const auto space = [](std::uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  for (std::uint64_t& x : v) {
    for (;;) {  // whitespace and comments
      if (pos >= b.size()) return {};
      if (space(b[pos])) ++pos;
      else if (b[pos] == '#') {
        while (pos < b.size() && b[pos] != '\n' && b[pos] != '\r') ++pos;
      } else break;
    }
    if (!std::isdigit(b[pos])) return unsized("PGM/PPM");
    while (pos < b.size() && std::isdigit(b[pos])) {
      x = x * 10 + (b[pos++] - '0');
      if (x > std::uint64_t(kMaxSide)) return unsized("PGM/PPM");
    }
    if (pos >= b.size() && !eof) return {};  // more digits may follow
  }
  const std::uint64_t w = v[0], h = v[1], maxval = v[2];
  if (w == 0 || h == 0 || maxval == 0 || maxval > 65535) return unsized("PGM/PPM");
  const std::uint64_t samples = w * h * (b[1] == '3' || b[1] == '6' ? 3 : 1);
  const bool binary = b[1] == '5' || b[1] == '6';
  const std::uint64_t body = binary ? samples * (maxval > 255 ? 2 : 1) : mul_sat(samples, kMaxPlainSampleChars);
  return bound_of(add_sat(add_sat(pos + 1, body), kTrailerRoom), "PGM/PPM of " + dims(w, h));
}

// `eof`: `b` is the whole file.
SizeBound size_bound(const std::vector<std::uint8_t>& b, bool eof) {
  if (b.size() < kSniffBytes && !eof) return {};
  static const std::uint8_t jpeg[3] = {0xFF, 0xD8, 0xFF};
  SizeBound s;
  if (starts_with(b, kPngSignature, 8)) s = png_bound(b);
  else if (starts_with(b, jpeg, 3)) s = jpeg_bound(b);
  else if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') s = bmp_bound(b);
  else if (b.size() >= 2 && b[0] == 'P' && (b[1] == '2' || b[1] == '3' || b[1] == '5' || b[1] == '6'))
    s = pnm_bound(b, eof);
  else return {SizeBound::not_image, 0, {}};  // recognise() says what it is from these bytes
  return s;
}

const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::vector<std::uint8_t> read_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (f.fd < 0) {
    const int e = errno;
    struct stat st {};
    if (e == ENXIO && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      read_fail(path, "not a regular file (it is a socket)");
    read_fail(path, "cannot open the file: " + errno_text(e));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) read_fail(path, "cannot examine the file: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) read_fail(path, std::string("not a regular file (it is ") + file_kind(st.st_mode) + ")");
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags < 0 || ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    read_fail(path, "cannot read the file: " + errno_text(errno));

  std::vector<std::uint8_t> bytes;
  SizeBound bound;
  std::uint64_t limit = kMetadataRoom;  // until the header gives the bound
  bool eof = false;
  const std::uint64_t size_hint = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  bytes.reserve(static_cast<std::size_t>(std::min(size_hint, limit) + 1));
  while (!eof) {
    // Read at most one byte past the limit: enough to know that the file exceeds it.
    const std::size_t old = bytes.size();
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, limit + 1 - old));
    bytes.resize(old + want);
    ssize_t n;
    do n = ::read(f.fd, bytes.data() + old, want);
    while (n < 0 && errno == EINTR);
    if (n < 0) read_fail(path, "read error: " + errno_text(errno));
    bytes.resize(old + static_cast<std::size_t>(n));
    eof = n == 0;
    if (bound.state == SizeBound::need_more) {
      bound = size_bound(bytes, eof);
      if (bound.state == SizeBound::not_image) break;
      if (bound.state == SizeBound::known) {
        limit = bound.bytes;
        bytes.reserve(static_cast<std::size_t>(std::min(size_hint, limit) + 1));
      }
    }
    if (bytes.size() > limit) {
      if (bound.state == SizeBound::known)
        read_fail(path, "the file is larger than any valid " + bound.declared + " can be (more than " +
                            std::to_string(limit) + " bytes)");
      read_fail(path, "the file is larger than any valid image whose header gives no size within its first " +
                          std::to_string(limit) + " bytes");
    }
  }
  if (bytes.empty()) read_fail(path, "the file is empty");
  return bytes;
}

// ------------------------------------------------------------------ structural checks
std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string chunk_name(const std::uint8_t* p) {
  std::string s(reinterpret_cast<const char*>(p), 4);
  for (char& c : s)
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  return s;
}

// Every chunk lies inside the file, up to IEND; critical chunks (upper-case first letter)
// have a correct CRC.
void check_png(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::size_t pos = 8;
  bool first = true;
  for (;;) {
    if (b.size() - pos < 12)
      read_fail(path, "the file is truncated (PNG ends at byte " + std::to_string(b.size()) +
                          " without its IEND chunk)");
    const std::uint32_t len = be32(&b[pos]);
    const std::string name = chunk_name(&b[pos + 4]);
    if (len > 0x7FFFFFFFu) read_fail(path, "corrupt PNG (chunk '" + name + "' has an invalid length)");
    if (first && name != "IHDR") read_fail(path, "corrupt PNG (the first chunk is not IHDR)");
    first = false;
    if (b.size() - pos - 12 < len)
      read_fail(path, "the file is truncated (PNG chunk '" + name + "' at byte " + std::to_string(pos) +
                          " runs past the end of the file)");
    if (std::isupper(b[pos + 4]) && crc32(&b[pos + 4], len + 4) != be32(&b[pos + 8 + len]))
      read_fail(path, "corrupt PNG (CRC mismatch in chunk '" + name + "' at byte " + std::to_string(pos) + ")");
    if (name == "IEND") return;
    pos += 12 + std::size_t(len);
  }
}

// A DHT segment's tables: at most 256 codes each, all inside the segment. (stb_image 2.27, the
// version Debian ships, does not check the count and overflows its tables.)
void check_jpeg_huffman_tables(const std::string& path, const std::uint8_t* p, std::size_t len) {
  const auto bad = [&] { read_fail(path, "corrupt JPEG (bad Huffman table)"); };
  std::size_t pos = 0;
  while (pos < len) {
    if (len - pos < 17 || (p[pos] >> 4) > 1 || (p[pos] & 15) > 3) bad();
    std::size_t codes = 0;
    for (int i = 1; i <= 16; ++i) codes += p[pos + i];
    if (codes > 256 || len - pos - 17 < codes) bad();
    pos += 17 + codes;
  }
}

// Marker segments and entropy-coded data up to an end-of-image marker (EOI, FF D9).
void check_jpeg(const std::string& path, const std::vector<std::uint8_t>& b) {
  const std::size_t n = b.size();
  const auto truncated = [&] { read_fail(path, "the file is truncated (JPEG without its end-of-image marker)"); };
  std::size_t pos = 2;  // after SOI
  for (;;) {
    // Find the next marker: FF, any fill FFs, then a non-zero code (tolerating stray bytes).
    while (pos < n && b[pos] != 0xFF) ++pos;
    while (pos < n && b[pos] == 0xFF) ++pos;
    if (pos >= n) truncated();
    const std::uint8_t m = b[pos++];
    if (m == 0xD9) return;                                          // EOI
    if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) continue;  // no length
    if (n - pos < 2) truncated();
    const std::size_t len = (std::size_t(b[pos]) << 8) | b[pos + 1];
    if (len < 2) read_fail(path, "corrupt JPEG (a marker segment has length " + std::to_string(len) + ")");
    if (n - pos < len) truncated();
    if (m == 0xC4) check_jpeg_huffman_tables(path, b.data() + pos + 2, len - 2);
    pos += len;
    if (m == 0xDA) {  // start of scan: entropy-coded data until a marker other than RSTn
      for (;;) {
        const void* ff = std::memchr(b.data() + pos, 0xFF, n - pos);
        if (!ff) truncated();
        pos = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ff) - b.data());
        if (pos + 1 >= n) truncated();
        const std::uint8_t next = b[pos + 1];
        if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) {
          pos += 2;
          continue;
        }
        break;  // a real marker: the outer loop reads it
      }
    }
  }
}

// The headers are whole and the pixel array fits in the file.
void check_bmp(const std::string& path, const std::vector<std::uint8_t>& b) {
  const std::size_t n = b.size();
  const auto truncated = [&](const char* what) {
    read_fail(path, std::string("the file is truncated (BMP ") + what + " is cut off)");
  };
  if (n < 18) truncated("header");
  const std::uint32_t offset = le32(&b[10]);
  const std::uint32_t header = le32(&b[14]);
  if (header < 12) read_fail(path, "corrupt BMP (header size " + std::to_string(header) + ")");
  if (n < 14 + std::size_t(header)) truncated("header");
  std::int64_t w = 0, h = 0;
  std::uint32_t bpp = 0, compression = 0;
  if (header == 12) {
    w = le16(&b[18]);
    h = le16(&b[20]);
    bpp = le16(&b[24]);
  } else {
    if (header < 40) read_fail(path, "corrupt BMP (header size " + std::to_string(header) + ")");
    w = static_cast<std::int32_t>(le32(&b[18]));
    h = static_cast<std::int32_t>(le32(&b[22]));
    bpp = le16(&b[28]);
    compression = le32(&b[30]);
  }
  if (h < 0) h = -h;
  if (w <= 0 || h <= 0 || w > kMaxSide || h > kMaxSide)
    read_fail(path, "corrupt BMP (size " + std::to_string(w) + "x" + std::to_string(h) + ")");
  if (offset < 14 + header || offset > n) truncated("pixel array");
  // Uncompressed layouts (BI_RGB, BI_BITFIELDS, BI_ALPHABITFIELDS): rows padded to 4 bytes,
  // the last row's padding optional. stb_image rejects the RLE ones itself.
  if (compression == 0 || compression == 3 || compression == 6) {
    const std::int64_t row_bytes = (w * bpp + 7) / 8;
    const std::int64_t stride = (w * bpp + 31) / 32 * 4;
    if (static_cast<std::int64_t>(n - offset) < stride * (h - 1) + row_bytes) truncated("pixel array");
  }
}

// ------------------------------------------------------------------ PGM/PPM
struct PnmReader {
  const std::string& path;
  const std::vector<std::uint8_t>& b;
  std::size_t pos = 2;

  [[noreturn]] void truncated() const {
    read_fail(path, "the file is truncated (PGM/PPM ends before all its pixels)");
  }
  static bool space(std::uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
  void skip_space_and_comments() {
    while (pos < b.size()) {
      if (space(b[pos])) ++pos;
      else if (b[pos] == '#')
        while (pos < b.size() && b[pos] != '\n' && b[pos] != '\r') ++pos;
      else break;
    }
  }
  // A decimal number no larger than `max`; `what` names it in errors.
  long long number(const char* what, long long max) {
    skip_space_and_comments();
    if (pos >= b.size()) truncated();
    if (!std::isdigit(b[pos]))
      read_fail(path, std::string("corrupt PGM/PPM (expected the ") + what + ", found '" +
                          static_cast<char>(b[pos]) + "')");
    long long v = 0;
    while (pos < b.size() && std::isdigit(b[pos])) {
      v = v * 10 + (b[pos++] - '0');
      if (v > max)
        read_fail(path, std::string("corrupt PGM/PPM (") + what + " larger than " + std::to_string(max) + ")");
    }
    return v;
  }
};

// Pixels of a P2/P3/P5/P6 file, scaled to 0..255 when maxval != 255.
HostImage decode_pnm(const std::string& path, const std::vector<std::uint8_t>& b) {
  PnmReader r{path, b};
  const char kind = static_cast<char>(b[1]);
  const int channels = (kind == '3' || kind == '6') ? 3 : 1;
  const bool binary = kind == '5' || kind == '6';
  HostImage img;
  img.cols = r.number("width", kMaxSide);
  img.rows = r.number("height", kMaxSide);
  const long long maxval = r.number("maximum value", 65535);
  if (img.rows == 0 || img.cols == 0 || maxval == 0)
    read_fail(path, "corrupt PGM/PPM (size " + shape_string(img.rows, img.cols) + ", maximum value " +
                        std::to_string(maxval) + ")");
  img.channels = channels;
  const std::size_t samples = std::size_t(img.rows) * std::size_t(img.cols) * std::size_t(channels);
  const auto scale = [maxval](long long v) {
    return static_cast<std::uint8_t>(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
  };
  if (binary) {
    // Exactly one whitespace byte separates the header from the raster.
    if (r.pos >= b.size()) r.truncated();
    if (!PnmReader::space(b[r.pos])) read_fail(path, "corrupt PGM/PPM (no whitespace after the header)");
    ++r.pos;
    const std::size_t bytes_per = maxval > 255 ? 2 : 1;
    if ((b.size() - r.pos) / bytes_per < samples) r.truncated();
    img.pixels.resize(samples);
    const std::uint8_t* p = &b[r.pos];
    for (std::size_t i = 0; i < samples; ++i) {
      const long long v = bytes_per == 2 ? (static_cast<long long>(p[2 * i]) << 8) | p[2 * i + 1] : p[i];
      if (v > maxval) read_fail(path, "corrupt PGM/PPM (a sample exceeds the maximum value)");
      img.pixels[i] = scale(v);
    }
  } else {
    // Each sample takes at least two bytes (a digit and a separator), bar the last.
    if ((b.size() - r.pos + 1) / 2 < samples) r.truncated();
    img.pixels.resize(samples);
    for (std::size_t i = 0; i < samples; ++i) {
      const long long v = r.number("sample", 65535);
      if (v > maxval) read_fail(path, "corrupt PGM/PPM (a sample exceeds the maximum value)");
      img.pixels[i] = scale(v);
    }
  }
  return img;
}

// ------------------------------------------------------------------ decoding
// Converts n_in interleaved channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) to 1 or 3.
HostImage convert(HostImage in, int n_out) {
  const int n_in = in.channels;
  if (n_in == n_out) return in;
  HostImage out;
  out.rows = in.rows;
  out.cols = in.cols;
  out.channels = n_out;
  const std::size_t n = std::size_t(in.rows) * std::size_t(in.cols);
  out.pixels.resize(n * n_out);
  const std::uint8_t* p = in.pixels.data();
  std::uint8_t* q = out.pixels.data();
  for (std::size_t i = 0; i < n; ++i, p += n_in) {
    if (n_out == 1) {
      q[i] = n_in >= 3 ? luma(p[0], p[1], p[2]) : p[0];
    } else if (n_in >= 3) {
      q[3 * i] = p[0], q[3 * i + 1] = p[1], q[3 * i + 2] = p[2];
    } else {
      q[3 * i] = q[3 * i + 1] = q[3 * i + 2] = p[0];
    }
  }
  return out;
}

HostImage decode(const std::string& path, int channels) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  const Format f = recognise(path, bytes);
  if (f == Format::pnm) return convert(decode_pnm(path, bytes), channels);
  switch (f) {
    case Format::png: check_png(path, bytes); break;
    case Format::jpeg: check_jpeg(path, bytes); break;
    default: check_bmp(path, bytes); break;
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    read_fail(path, "the file is too large for the decoder (over 2 GiB)");
  int w = 0, h = 0, n = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> px(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &n, 0), &stbi_image_free);
  if (!px) {
    const char* why = stbi_failure_reason();
    read_fail(path, std::string("corrupt or unsupported ") + format_name(f) + " data (" +
                        (why ? why : "unknown reason") + ")");
  }
  if (w <= 0 || h <= 0 || n < 1 || n > 4)
    read_fail(path, std::string("corrupt ") + format_name(f) + " data (size " + std::to_string(w) + "x" +
                        std::to_string(h) + ")");
  HostImage img;
  img.rows = h;
  img.cols = w;
  img.channels = n;
  img.pixels.assign(px.get(), px.get() + std::size_t(w) * std::size_t(h) * std::size_t(n));
  return convert(std::move(img), channels);
}

// ------------------------------------------------------------------ encoding and writing
void append_bytes(void* ctx, void* data, int size) {
  auto* out = static_cast<std::vector<std::uint8_t>*>(ctx);
  const auto* p = static_cast<const std::uint8_t*>(data);
  out->insert(out->end(), p, p + size);
}

void put_be32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  const std::uint8_t b[4] = {static_cast<std::uint8_t>(v >> 24), static_cast<std::uint8_t>(v >> 16),
                             static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
  out.insert(out.end(), b, b + 4);
}

// A PNG chunk: length, type, data, CRC of type and data.
void put_png_chunk(std::vector<std::uint8_t>& out, const char* type, const std::uint8_t* data, std::size_t len) {
  put_be32(out, static_cast<std::uint32_t>(len));
  const std::size_t at = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data, data + len);
  put_be32(out, crc32(&out[at], len + 4));
}

std::vector<std::uint8_t> png_stored(const HostImage& img) {
  const std::size_t row_bytes = static_cast<std::size_t>(img.cols) * static_cast<std::size_t>(img.channels);
  const std::size_t total = static_cast<std::size_t>(img.rows) * (row_bytes + 1);  // the filtered data
  constexpr std::size_t kBlock = 65535;              // a stored deflate block's most
  constexpr std::size_t kIdat = std::size_t(1) << 26;  // zlib bytes an IDAT chunk
  std::vector<std::uint8_t> out;
  out.reserve(total + total / kBlock * 5 + 1024 + (total / kIdat + 1) * 12);
  static const std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  out.insert(out.end(), kSignature, kSignature + 8);
  std::vector<std::uint8_t> ihdr;
  put_be32(ihdr, static_cast<std::uint32_t>(img.cols));
  put_be32(ihdr, static_cast<std::uint32_t>(img.rows));
  const std::uint8_t rest[5] = {8, static_cast<std::uint8_t>(img.channels == 3 ? 2 : 0), 0, 0, 0};  // 8 bits, no interlace
  ihdr.insert(ihdr.end(), rest, rest + 5);
  put_png_chunk(out, "IHDR", ihdr.data(), ihdr.size());
  // The zlib stream (header, stored blocks, Adler-32), cut into IDAT chunks of kIdat bytes.
  std::vector<std::uint8_t> z;
  z.reserve(kIdat + kBlock + 16);
  const auto flush = [&](bool all) {
    std::size_t done = 0;
    while (z.size() - done >= kIdat || (all && done < z.size())) {
      const std::size_t n = std::min(kIdat, z.size() - done);
      put_png_chunk(out, "IDAT", z.data() + done, n);
      done += n;
    }
    z.erase(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(done));
  };
  z.push_back(0x78);  // deflate, 32 KiB window
  z.push_back(0x01);  // no preset dictionary, fastest; (0x78 << 8 | 0x01) % 31 == 0
  std::uint32_t a = 1, b = 0;  // Adler-32
  std::size_t r = 0, off = 0;  // position in the filtered data: row r, byte off (0: the filter byte)
  for (std::size_t pos = 0; pos < total;) {
    const std::size_t len = std::min(kBlock, total - pos);
    const std::uint8_t head[5] = {static_cast<std::uint8_t>(pos + len == total ? 1 : 0), static_cast<std::uint8_t>(len),
                                  static_cast<std::uint8_t>(len >> 8), static_cast<std::uint8_t>(~len),
                                  static_cast<std::uint8_t>(~len >> 8)};
    z.insert(z.end(), head, head + 5);
    for (std::size_t left = len; left > 0;) {
      const std::size_t from = z.size();
      if (off == 0) {
        z.push_back(0);  // filter: none
        ++off;
        --left;
      } else {
        const std::size_t n = std::min(left, row_bytes + 1 - off);
        const std::uint8_t* src = img.pixels.data() + r * row_bytes + (off - 1);
        z.insert(z.end(), src, src + n);
        off += n;
        left -= n;
      }
      if (off == row_bytes + 1) off = 0, ++r;
      for (std::size_t i = from; i < z.size(); ++i) {  // Adler-32 (sums below 2^32 for 5552 bytes)
        a += z[i];
        b += a;
        if ((i - from) % 4096 == 4095) a %= 65521u, b %= 65521u;
      }
      a %= 65521u;
      b %= 65521u;
    }
    pos += len;
    flush(false);
  }
  put_be32(z, (b << 16) | a);
  flush(true);
  put_png_chunk(out, "IEND", nullptr, 0);
  return out;
}

// The filtered image data (each row: filter byte 0, then the row) that encode_png gives
// stb_image_write at most: stb deflates into a buffer whose int capacity doubles, which
// overflows (and writes past the buffer) once the output passes 1,610,612,735 bytes, and its
// fixed Huffman codes grow the data by up to 1/8. Larger images go to encode_png_stored.
constexpr long long kStbPngMaxBytes = 1LL << 30;

std::vector<std::uint8_t> encode_png(const std::string& path, const HostImage& img) {
  const long long row = static_cast<long long>(img.cols) * img.channels + 1;
  if (img.rows > 0x7FFFFFFF || img.cols > 0x7FFFFFFF)  // the PNG format's limit
    write_fail(path, "the image (" + shape_string(img.rows, img.cols) + ") is too large for PNG (2^31 - 1 a side)");
  if (row * img.rows > kStbPngMaxBytes) return png_stored(img);
  std::vector<std::uint8_t> out;
  const int ok = stbi_write_png_to_func(&append_bytes, &out, static_cast<int>(img.cols), static_cast<int>(img.rows),
                                        img.channels, img.pixels.data(), static_cast<int>(img.cols) * img.channels);
  if (!ok || out.empty()) write_fail(path, "the PNG encoder failed (out of memory?)");
  return out;
}

std::vector<std::uint8_t> encode_pnm(const HostImage& img, int channels) {
  const std::string header = std::string(channels == 3 ? "P6" : "P5") + "\n" + std::to_string(img.cols) + " " +
                             std::to_string(img.rows) + "\n255\n";
  std::vector<std::uint8_t> out(header.begin(), header.end());
  if (channels == img.channels) {
    out.insert(out.end(), img.pixels.begin(), img.pixels.end());
  } else {
    const HostImage c = convert(img, channels);
    out.insert(out.end(), c.pixels.begin(), c.pixels.end());
  }
  return out;
}

// Writes `bytes` to a new temporary file next to `path`, then renames it over `path`.
void write_atomically(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = path + ".devmat-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt >= 100))
      write_fail(path, "cannot create a file in its folder: " + errno_text(errno));
  }
  const auto fail_and_remove = [&](const std::string& why, int e) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    write_fail(path, why + ": " + errno_text(e));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_and_remove("write failed", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) fail_and_remove("write failed (fsync)", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail_and_remove("write failed (close)", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail_and_remove("cannot replace the file", errno);
}

std::string lower_extension(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace

ImageFormat image_format_for(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".png") return ImageFormat::png;
  if (ext == ".pgm") return ImageFormat::pgm;
  if (ext == ".ppm") return ImageFormat::ppm;
  write_fail(path, (ext.empty() ? std::string("no file extension") : "unsupported extension '" + ext + "'") +
                       " (supported: .png, .pgm, .ppm)");
}

std::uint8_t luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) noexcept {
  // Exact rounding (half up) of the real value 0.299 R + 0.587 G + 0.114 B.
  return static_cast<std::uint8_t>((299u * r + 587u * g + 114u * b + 500u) / 1000u);
}

std::vector<std::uint8_t> encode_png_stored(const HostImage& image) { return png_stored(image); }

HostImage decode_gray(const std::string& path) { return decode(path, 1); }
HostImage decode_rgb(const std::string& path) { return decode(path, 3); }

void encode_image(const std::string& path, const HostImage& image) {
  const ImageFormat format = image_format_for(path);
  if (image.channels != 1 && image.channels != 3)
    throw std::invalid_argument("devmat: encode_image: " + std::to_string(image.channels) +
                                " channels (expected 1 or 3)");
  if (image.rows <= 0 || image.cols <= 0)
    write_fail(path, "the image is empty (" + shape_string(image.rows, image.cols) + ")");
  if (image.pixels.size() != std::size_t(image.rows) * std::size_t(image.cols) * std::size_t(image.channels))
    throw std::invalid_argument("devmat: encode_image: pixel buffer does not match " +
                                shape_string(image.rows, image.cols) + "x" + std::to_string(image.channels));
  std::vector<std::uint8_t> bytes;
  switch (format) {
    case ImageFormat::png: bytes = encode_png(path, image); break;
    case ImageFormat::pgm: bytes = encode_pnm(image, 1); break;
    case ImageFormat::ppm: bytes = encode_pnm(image, 3); break;
  }
  write_atomically(path, bytes);
}

}  // namespace detail

// ------------------------------------------------------------------ the public API
namespace {
Rgb8 to_planes(const detail::HostImage& h, const Stream& stream) {
  // The interleaved bytes go up as decoded; the device splits them (split_channels).
  const Image8 interleaved = Image8::from_host(h.pixels.data(), h.rows, 3 * h.cols, stream);
  std::vector<Image8> planes = split_channels(interleaved, 3);
  return {std::move(planes[0]), std::move(planes[1]), std::move(planes[2])};
}
}  // namespace

bool image_io_available() noexcept { return true; }

// Each overload decodes before it touches a stream, so file errors need no device.
Image8 load_gray(const std::string& path) {
  const detail::HostImage h = detail::decode_gray(path);
  return Image8::from_host(h.pixels.data(), h.rows, h.cols, Stream::per_thread());
}

Image8 load_gray(const std::string& path, const Stream& stream) {
  const detail::HostImage h = detail::decode_gray(path);
  return Image8::from_host(h.pixels.data(), h.rows, h.cols, stream);
}

Rgb8 load_rgb(const std::string& path) {
  const detail::HostImage h = detail::decode_rgb(path);
  return to_planes(h, Stream::per_thread());
}

Rgb8 load_rgb(const std::string& path, const Stream& stream) {
  const detail::HostImage h = detail::decode_rgb(path);
  return to_planes(h, stream);
}

void save_image(const std::string& path, const MatrixView<const std::uint8_t>& gray) {
  detail::image_format_for(path);  // a bad extension fails before any device work
  if (gray.empty())
    throw io_error("devmat: cannot write image '" + path + "': the image is empty (" +
                   detail::shape_string(gray.rows(), gray.cols()) + ")");
  detail::HostImage h;
  h.rows = gray.rows();
  h.cols = gray.cols();
  h.channels = 1;
  h.pixels = gray.to_vector();
  detail::encode_image(path, h);
}

void save_image(const std::string& path, const Rgb8& rgb) {
  detail::image_format_for(path);
  for (int c = 1; c < 3; ++c)
    if (rgb[c].rows() != rgb[0].rows() || rgb[c].cols() != rgb[0].cols())
      detail::throw_shape_error("save_image", rgb[0].rows(), rgb[0].cols(), rgb[c].rows(), rgb[c].cols(),
                                "(R plane and G or B plane) differ");
  if (rgb[0].empty())
    throw io_error("devmat: cannot write image '" + path + "': the image is empty (" +
                   detail::shape_string(rgb[0].rows(), rgb[0].cols()) + ")");
  // Interleaved on the device (on R's stream, after the work queued on G's and B's), then one
  // copy down: the bytes the encoder takes.
  detail::HostImage h;
  h.rows = rgb[0].rows();
  h.cols = rgb[0].cols();
  h.channels = 3;
  h.pixels = merge_channels({rgb[0], rgb[1], rgb[2]}).to_vector();
  detail::encode_image(path, h);
}

namespace {
template <class Buffer>
ImageShape read_into(const std::string& path, int channels, Buffer& pixels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("devmat: read_image: " + std::to_string(channels) + " channels (expected 1 or 3)");
  detail::HostImage h = channels == 1 ? detail::decode_gray(path) : detail::decode_rgb(path);
  if constexpr (std::is_same_v<Buffer, std::vector<std::uint8_t>>) {
    pixels = std::move(h.pixels);
  } else {
    pixels.resize(h.pixels.size());
    std::memcpy(pixels.data(), h.pixels.data(), h.pixels.size());
  }
  return {h.rows, h.cols, h.channels};
}
}  // namespace

ImageShape read_image(const std::string& path, int channels, PinnedBuffer<std::uint8_t>& pixels) {
  return read_into(path, channels, pixels);
}

ImageShape read_image(const std::string& path, int channels, std::vector<std::uint8_t>& pixels) {
  return read_into(path, channels, pixels);
}

void write_image(const std::string& path, const std::uint8_t* pixels, Index rows, Index cols, int channels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("devmat: write_image: " + std::to_string(channels) + " channels (expected 1 or 3)");
  detail::image_format_for(path);  // a bad extension is io_error before anything else
  if (rows <= 0 || cols <= 0)
    throw io_error("devmat: cannot write image '" + path + "': the image is empty (" +
                   detail::shape_string(rows, cols) + ")");
  if (!pixels) throw std::invalid_argument("devmat: write_image: null pixel pointer");
  detail::HostImage h;
  h.rows = rows;
  h.cols = cols;
  h.channels = channels;
  h.pixels.assign(pixels, pixels + std::size_t(rows) * std::size_t(cols) * std::size_t(channels));
  detail::encode_image(path, h);
}

}  // namespace devmat
