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
// PNG, JPEG and BMP pixels are then decoded by stb_image, except PNGs too large for it (over
// 2^30 bytes of pixels, a side over 2^24 or a file over 2 GiB), which are decoded here (see
// "PNGs too large for stb_image"). Gray output is luma computed here (0.299 R + 0.587 G +
// 0.114 B, rounded), not stb's own approximation.
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
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace devmat {
namespace detail {
namespace {

// Largest side accepted on reading (as stb_image's own limit); PNGs, decoded here past it,
// may have the PNG format's largest, 2^31 - 1.
constexpr Index kMaxSide = Index(1) << 24;
constexpr std::uint64_t kMaxPngSide = 0x7FFFFFFF;

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
//   an int, so a JPEG or BMP is also capped at INT_MAX bytes (a PNG past it is decoded here,
//   see "PNGs too large for stb_image"). Frames of an animated PNG beyond the default image
//   count against the metadata room.
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
  const std::uint64_t w = std::min<std::uint64_t>(be32(&b[16]), kMaxPngSide);
  const std::uint64_t h = std::min<std::uint64_t>(be32(&b[20]), kMaxPngSide);
  const int depth = std::clamp<int>(b[24], 1, 16);
  const int channels = b[25] == 0 || b[25] == 3 ? 1 : b[25] == 2 ? 3 : b[25] == 4 ? 2 : 4;
  const std::uint64_t row = (w * static_cast<std::uint64_t>(channels * depth) + 7) / 8 + 14;
  const std::uint64_t raw = mul_sat(h, row);
  const std::uint64_t n = add_sat(add_sat(raw, raw / 4), add_sat(kMetadataRoom, kTrailerRoom));
  return bound_of(n, "PNG of " + dims(w, h));  // no int cap: PNGs past it are decoded here
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

// The Adler-32 checksum that ends a zlib stream (RFC 1950), over bytes given in any pieces:
// png_stored computes it for what it writes, the PNG decoder checks it for what it inflates.
struct Adler32 {
  std::uint32_t a = 1, b = 0;
  void update(const std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      const std::size_t k = std::min<std::size_t>(n, 5552);  // the most before the sums can pass 2^32
      for (std::size_t i = 0; i < k; ++i) a += p[i], b += a;
      a %= 65521u, b %= 65521u;
      p += k, n -= k;
    }
  }
  std::uint32_t value() const { return (b << 16) | a; }
};

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

// ------------------------------------------------------------------ PNGs too large for stb_image
// save_image writes PNGs of any size up to 2^31 - 1 a side (png_stored past 2^30 bytes), but
// stb_image cannot read them back: it takes the file's size as an int, refuses a side over
// STBI_MAX_DIMENSIONS (2^24) and any image whose w * h * channels passes 2^30 (its buffers are
// ints; a palette counts 4 channels). Such PNGs are decoded here instead: a zlib inflater
// (RFC 1950/1951) that writes straight into the final pixel buffer, unfiltering each row as
// its bytes arrive, every size in 64 bits, so a 10 GB image needs its pixels, the file and
// little else. It reads what devmat and common encoders write for large images: 8-bit gray,
// gray+alpha, RGB and RGBA without interlacing; other large PNGs are refused by name.

// The IHDR fields (the first chunk, which check_png or png_header has checked is there).
struct PngHeader {
  std::uint64_t w = 0, h = 0;
  int depth = 0, color = 0, interlace = 0;
  int compression = 0, filter = 0;
  int samples() const { return color == 2 ? 3 : color == 4 ? 2 : color == 6 ? 4 : 1; }  // per pixel, as stored
  bool own_decoder_reads() const { return depth == 8 && color != 3 && interlace == 0; }
};

// The header of `b` when it begins with a PNG signature and a whole 13-byte IHDR chunk.
bool png_header(const std::vector<std::uint8_t>& b, PngHeader& p) {
  if (b.size() < 33 || be32(&b[8]) != 13 || std::memcmp(&b[12], "IHDR", 4) != 0) return false;
  p.w = be32(&b[16]);
  p.h = be32(&b[20]);
  p.depth = b[24], p.color = b[25], p.compression = b[26], p.filter = b[27], p.interlace = b[28];
  return true;
}

// When set (tests only), every PNG goes to the decoder below.
std::atomic<bool> g_force_own_png{false};

// Whether a PNG goes to the decoder below rather than stb_image. Exactly where stb refuses
// (see above) for the PNGs that it reads alone, so that nothing stb reads changes; a little
// earlier (w * h * channels + h past 2^30, the size of stb's inflated buffer) for those it
// reads too, where stb's int arithmetic is closest to its edge.
bool use_own_png_decoder(const std::vector<std::uint8_t>& b) {
  PngHeader p;
  if (!png_header(b, p)) return false;  // check_png and stb say what is wrong
  if (g_force_own_png) return true;
  if (p.w == 0 || p.h == 0) return false;  // stb: "0-pixel image"
  if (b.size() > kMaxStbFileBytes || p.w > std::uint64_t(kMaxSide) || p.h > std::uint64_t(kMaxSide)) return true;
  constexpr std::uint64_t kStbMaxDecoded = std::uint64_t(1) << 30;
  const std::uint64_t decoded = p.w * p.h * std::uint64_t(p.color == 3 ? 4 : p.samples());  // sides <= 2^24
  return p.own_decoder_reads() ? decoded + p.h > kStbMaxDecoded : decoded > kStbMaxDecoded;
}

// The zlib stream of a PNG, read in place from its IDAT chunks' data (no copy), least
// significant bit first as deflate packs it, through a 64-bit buffer. Past the end of the data
// it supplies zero bits and counts them, so the inflater checks once per symbol rather than on
// every bit whether the stream ran out (overrun()).
class BitReader {
 public:
  struct Span {
    const std::uint8_t* data;
    std::size_t size;
  };
  explicit BitReader(std::vector<Span> spans) : spans_(std::move(spans)) { next_span(); }

  // At least `n` (up to 57) bits in the buffer, zero bits past the end of the data.
  void need(unsigned n) {
    while (cnt_ < n) {
      if (end_ - p_ >= 8 && pad_ == 0) {
        // Eight bytes at once; the bits above cnt_ that this also sets are the next bytes
        // of this same span, which the next refill ORs in again unchanged.
        std::uint64_t v;
        std::memcpy(&v, p_, 8);
        if constexpr (!kLittleEndian) v = __builtin_bswap64(v);
        buf_ |= v << cnt_;
        const unsigned take = (63 - cnt_) >> 3;
        p_ += take;
        cnt_ += 8 * take;
      } else if (p_ != end_) {
        buf_ |= std::uint64_t(*p_++) << cnt_;
        cnt_ += 8;
      } else if (!next_span()) {
        pad_ += 8;  // zero bits: buf_ is already zero above cnt_ once the data is spent
        cnt_ += 8;
      }
    }
  }
  std::uint64_t peek() const { return buf_; }
  void drop(unsigned n) {
    buf_ >>= n;
    cnt_ -= n;
  }
  std::uint32_t take(unsigned n) {  // n <= 32
    need(n);
    const auto v = static_cast<std::uint32_t>(buf_ & ((std::uint64_t(1) << n) - 1));
    drop(n);
    return v;
  }
  void align_to_byte() { drop(cnt_ % 8); }
  // Whether bits past the end of the data were consumed.
  bool overrun() const { return cnt_ < pad_; }

  // Copies `n` bytes of a stored block (the reader is byte aligned): first those already in
  // the buffer, then straight from the chunks. False if the data end first.
  bool copy_bytes(std::uint8_t* out, std::size_t n) {
    for (; n > 0 && cnt_ >= 8 && cnt_ - 8 >= pad_; --n) *out++ = static_cast<std::uint8_t>(take(8));
    if (n == 0) return true;
    if (cnt_ > pad_) return false;  // cannot happen when aligned; no real bits are left here
    buf_ = 0, cnt_ = 0;  // drop the look-ahead bits, all of them from p_ on
    while (n > 0) {
      if (p_ == end_ && !next_span()) return false;
      const std::size_t k = std::min(n, static_cast<std::size_t>(end_ - p_));
      std::memcpy(out, p_, k);
      out += k, p_ += k, n -= k;
    }
    return true;
  }

 private:
  static constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  bool next_span() {
    while (span_ < spans_.size()) {
      const Span s = spans_[span_++];
      if (s.size == 0) continue;
      p_ = s.data, end_ = s.data + s.size;
      return true;
    }
    return false;
  }
  std::vector<Span> spans_;
  std::size_t span_ = 0;
  const std::uint8_t* p_ = nullptr;
  const std::uint8_t* end_ = nullptr;
  std::uint64_t buf_ = 0;
  unsigned cnt_ = 0;  // bits in buf_
  unsigned pad_ = 0;  // of which zero bits past the end of the data (the most significant)
};

// A canonical Huffman code (RFC 1951 3.2.2), built from its code lengths. The next kFastBits
// bits of input index a table that gives the symbol and length of every code up to kFastBits
// long (codes arrive first bit first in the low bits, so the table is indexed by reversed
// codes); the rare longer codes (up to 15 bits) are decoded a bit at a time from the counts per
// length, as zlib's reference decoder "puff" does.
class Huffman {
 public:
  // False for lengths that do not form a code: over-subscribed, or incomplete where zlib
  // refuses it too: the code-length code must be complete (`lengths_code`); the others may be a
  // lone code of length 1, and the distance code (`allow_empty`) may have no codes at all
  // (a block of literals only).
  bool build(const std::uint8_t* lengths, int n, bool lengths_code, bool allow_empty) {
    count_.fill(0);
    for (int s = 0; s < n; ++s) ++count_[lengths[s]];
    count_[0] = 0;
    int left = 1, used = 0;
    for (int len = 1; len <= 15; ++len) {
      left = 2 * left - count_[len];
      used += count_[len];
      if (left < 0) return false;
    }
    if (left > 0 && (lengths_code || used > 1) && !(used == 0 && allow_empty)) return false;
    // Symbols in code order, and the first code of each length.
    std::array<int, 16> offset{}, next{};
    for (int len = 1, code = 0; len <= 15; ++len) {  // RFC 1951 3.2.2, count_[0] being 0
      offset[len] = offset[len - 1] + count_[len - 1];
      code = (code + count_[len - 1]) << 1;
      next[len] = code;
    }
    for (int s = 0; s < n; ++s)
      if (lengths[s]) symbol_[offset[lengths[s]]++] = static_cast<std::uint16_t>(s);
    fast_.fill(0);
    for (int s = 0; s < n; ++s) {
      const int len = lengths[s];
      if (len == 0) continue;
      const int code = next[len]++;
      if (len > kFastBits) continue;
      int rev = 0;
      for (int i = 0; i < len; ++i) rev |= ((code >> i) & 1) << (len - 1 - i);
      for (int i = rev; i < (1 << kFastBits); i += 1 << len) fast_[i] = static_cast<std::uint16_t>(s << 4 | len);
    }
    return true;
  }

  // The next symbol, or -1 for bits that are no code (an incomplete code's unused codes).
  int decode(BitReader& in) const {
    in.need(15);
    const std::uint64_t bits = in.peek();
    const std::uint16_t e = fast_[bits & ((1u << kFastBits) - 1)];
    if (e & 15) {
      in.drop(e & 15);
      return e >> 4;
    }
    int code = 0, first = 0, index = 0;
    for (unsigned len = 1; len <= 15; ++len) {
      code |= static_cast<int>((bits >> (len - 1)) & 1);
      const int count = count_[len];
      if (code - first < count) {
        in.drop(len);
        return symbol_[index + code - first];
      }
      index += count;
      first = (first + count) << 1;
      code <<= 1;
    }
    return -1;
  }

 private:
  static constexpr int kFastBits = 10;
  std::array<std::uint16_t, 1 << kFastBits> fast_{};  // symbol << 4 | length; 0: longer or none
  std::array<std::uint16_t, 16> count_{};             // codes of each length
  std::array<std::uint16_t, 288> symbol_{};           // symbols in code order
};

// Undoes the PNG filters (None, Sub, Up, Average, Paeth) row by row as the inflated bytes
// arrive, in any pieces: each row is its filter type byte, then row_bytes filtered bytes,
// which become row r of the image. The predictors read the row's own bytes to the left and
// the row above, already unfiltered in the image, so no row is buffered.
class Unfilter {
 public:
  Unfilter(std::uint8_t* image, std::uint64_t rows, std::size_t row_bytes, std::size_t bpp)
      : img_(image), rows_(rows), row_bytes_(row_bytes), bpp_(bpp) {}

  // False when the bytes run past the image or a filter type is not 0..4 (`bad_filter`).
  bool feed(const std::uint8_t* p, std::size_t n, bool& bad_filter) {
    while (n > 0) {
      if (r_ == rows_) return false;
      if (filter_ < 0) {
        if (*p > 4) return bad_filter = true, false;
        filter_ = *p++, --n;
        x_ = 0;
      }
      const std::size_t k = std::min(n, row_bytes_ - x_);
      unfilter(p, k);
      p += k, n -= k, x_ += k;
      if (x_ == row_bytes_) ++r_, filter_ = -1;
    }
    return true;
  }
  bool done() const { return r_ == rows_; }

 private:
  // Bytes x_ .. x_ + n - 1 of row r_ from their filtered values `in`.
  void unfilter(const std::uint8_t* in, std::size_t n) {
    std::uint8_t* out = img_ + r_ * row_bytes_;
    const std::uint8_t* up = r_ > 0 ? out - row_bytes_ : nullptr;  // the first row's is zeros
    std::size_t i = x_;
    const std::size_t to = x_ + n;
    in -= x_;  // in[i] is byte i's filtered value
    // The row's first pixel has no left or upper-left neighbour (zeros): Sub is None there,
    // Paeth picks the byte above, Average halves it.
    for (; i < to && i < bpp_; ++i) {
      const unsigned b = up ? up[i] : 0u;
      out[i] = static_cast<std::uint8_t>(in[i] + (filter_ == 2 || filter_ == 4 ? b : filter_ == 3 ? b >> 1 : 0u));
    }
    // The rest, one loop per filter with no test inside (the first row: Up is None, Paeth is
    // Sub, Average halves the left byte).
    const std::size_t d = bpp_;
    switch (up ? filter_ : filter_ == 2 ? 0 : filter_ == 4 ? 1 : filter_ == 3 ? 5 : filter_) {
      case 0: std::memcpy(out + i, in + i, to - i); break;
      case 1:
        for (; i < to; ++i) out[i] = static_cast<std::uint8_t>(in[i] + out[i - d]);
        break;
      case 2:
        for (; i < to; ++i) out[i] = static_cast<std::uint8_t>(in[i] + up[i]);
        break;
      case 3:
        for (; i < to; ++i) out[i] = static_cast<std::uint8_t>(in[i] + ((out[i - d] + up[i]) >> 1));
        break;
      case 5:  // Average on the first row
        for (; i < to; ++i) out[i] = static_cast<std::uint8_t>(in[i] + (out[i - d] >> 1));
        break;
      default:  // Paeth: whichever of left, up and upper-left is nearest to left + up - upper-left
        for (; i < to; ++i) {
          const int a = out[i - d], b = up[i], c = up[i - d];
          const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
          const int pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          out[i] = static_cast<std::uint8_t>(in[i] + pred);
        }
    }
  }

  std::uint8_t* img_;
  std::uint64_t rows_;
  std::size_t row_bytes_, bpp_;
  std::uint64_t r_ = 0;  // the row being filled
  std::size_t x_ = 0;    // its next byte
  int filter_ = -1;      // its filter type; -1: its filter type byte is next
};

// Inflates a zlib stream (RFC 1950 around RFC 1951) into `sink`: stored, fixed-Huffman and
// dynamic-Huffman blocks, the Adler-32 of the output checked at the end. Output goes through a
// window buffer (the 32 KiB that back-references may reach, then kPiece bytes), handed to the
// sink whenever the piece is full, so that matches copy within one flat buffer.
class Inflater {
 public:
  Inflater(const std::string& path, BitReader& in, Unfilter& sink) : path_(path), in_(in), sink_(sink) {
    win_.resize(kWindow + kPiece + kMaxMatch);
  }

  void run() {
    const std::uint32_t cmf = in_.take(8), flg = in_.take(8);
    if (in_.overrun()) truncated();
    if ((cmf & 15) != 8 || (cmf >> 4) > 7) corrupt("the zlib stream is not deflate with a window up to 32 KiB");
    if ((cmf * 256 + flg) % 31 != 0) corrupt("bad zlib header check bits");
    if (flg & 0x20) corrupt("the zlib stream needs a preset dictionary");
    for (bool last = false; !last;) {
      last = in_.take(1) != 0;
      const std::uint32_t type = in_.take(2);
      if (in_.overrun()) truncated();
      if (type == 0) stored_block();
      else if (type == 1) huffman_block(fixed_lit(), fixed_dist());
      else if (type == 2) dynamic_block();
      else corrupt("a deflate block of the reserved type 3");
    }
    flush();
    if (!sink_.done()) corrupt("the compressed image data end before the last row");
    in_.align_to_byte();
    std::uint32_t want = 0;
    for (int i = 0; i < 4; ++i) want = want << 8 | in_.take(8);
    if (in_.overrun()) truncated();
    if (want != adler_.value()) corrupt("Adler-32 mismatch in the compressed image data");
    // Bytes after the Adler-32 are ignored, as libpng and stb_image do.
  }

 private:
  static constexpr std::size_t kWindow = 32768, kPiece = std::size_t(1) << 20, kMaxMatch = 258;

  [[noreturn]] void corrupt(const std::string& why) const { read_fail(path_, "corrupt PNG (" + why + ")"); }
  [[noreturn]] void truncated() const { corrupt("the compressed image data end in the middle of the stream"); }

  // Hands the bytes made since the last flush to the sink (and to Adler-32), then keeps only
  // the last kWindow bytes, which later matches may still reach.
  void flush() {
    const std::uint8_t* p = win_.data() + handed_;
    const std::size_t n = out_ - handed_;
    bool bad_filter = false;
    if (!sink_.feed(p, n, bad_filter))
      corrupt(bad_filter ? "a row has a filter type other than 0-4" : "the compressed image data are longer than the image");
    adler_.update(p, n);
    if (out_ > kWindow) {
      std::memmove(win_.data(), win_.data() + out_ - kWindow, kWindow);
      out_ = kWindow;
    }
    handed_ = out_;
  }

  void stored_block() {
    in_.align_to_byte();
    const std::uint32_t len = in_.take(16), nlen = in_.take(16);
    if (in_.overrun()) truncated();
    if (len != (~nlen & 0xFFFFu)) corrupt("a stored deflate block's length does not match its complement");
    for (std::size_t left = len; left > 0;) {
      if (out_ >= kWindow + kPiece) flush();
      const std::size_t k = std::min(left, kWindow + kPiece - out_);
      if (!in_.copy_bytes(win_.data() + out_, k)) truncated();
      out_ += k, left -= k;
    }
  }

  void dynamic_block() {
    // The code lengths of the literal/length and distance codes, themselves Huffman-coded with
    // run lengths (RFC 1951 3.2.7).
    const std::uint32_t nlit = in_.take(5) + 257, ndist = in_.take(5) + 1, nclen = in_.take(4) + 4;
    if (nlit > 286 || ndist > 30) corrupt("a dynamic Huffman block declares too many codes");
    static const std::uint8_t kOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    std::uint8_t cl[19] = {};
    for (std::uint32_t i = 0; i < nclen; ++i) cl[kOrder[i]] = static_cast<std::uint8_t>(in_.take(3));
    if (in_.overrun()) truncated();
    Huffman clcode;
    if (!clcode.build(cl, 19, true, false)) corrupt("a bad Huffman code-length code");
    std::uint8_t lengths[286 + 30] = {};
    for (std::uint32_t i = 0; i < nlit + ndist;) {
      const int sym = clcode.decode(in_);
      if (in_.overrun()) truncated();
      if (sym < 0) corrupt("a bad Huffman code length");
      if (sym < 16) {
        lengths[i++] = static_cast<std::uint8_t>(sym);
        continue;
      }
      std::uint8_t value = 0;
      std::uint32_t repeat = 0;
      if (sym == 16) {
        if (i == 0) corrupt("a Huffman code length repeats nothing");
        value = lengths[i - 1], repeat = 3 + in_.take(2);
      } else {
        repeat = sym == 17 ? 3 + in_.take(3) : 11 + in_.take(7);
      }
      if (in_.overrun()) truncated();
      if (repeat > nlit + ndist - i) corrupt("Huffman code lengths run past their count");
      for (; repeat > 0; --repeat) lengths[i++] = value;
    }
    if (lengths[256] == 0) corrupt("a Huffman code without the end-of-block symbol");
    Huffman lit, dist;
    if (!lit.build(lengths, static_cast<int>(nlit), false, false)) corrupt("a bad literal/length Huffman code");
    if (!dist.build(lengths + nlit, static_cast<int>(ndist), false, true)) corrupt("a bad distance Huffman code");
    huffman_block(lit, dist);
  }

  static const Huffman& fixed_lit() {
    static const Huffman h = [] {
      std::uint8_t len[288];
      std::fill(len, len + 144, 8), std::fill(len + 144, len + 256, 9);
      std::fill(len + 256, len + 280, 7), std::fill(len + 280, len + 288, 8);
      Huffman c;
      c.build(len, 288, false, false);
      return c;
    }();
    return h;
  }
  static const Huffman& fixed_dist() {
    static const Huffman h = [] {
      std::uint8_t len[32];  // 30 and 31 are codes that never occur (RFC 1951 3.2.6)
      std::fill(len, len + 32, 5);
      Huffman c;
      c.build(len, 32, false, false);
      return c;
    }();
    return h;
  }

  // Literals and matches (length, distance) up to the end-of-block symbol.
  void huffman_block(const Huffman& lit, const Huffman& dist) {
    static const std::uint16_t kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                               31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const std::uint8_t kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const std::uint16_t kDistBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,
                                                33,  49,  65,  97,  129, 193,  257,  385,  513,  769,
                                                1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const std::uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                                6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    std::uint8_t* const w = win_.data();
    for (;;) {
      if (out_ >= kWindow + kPiece) flush();  // room for the longest match stays
      const int sym = lit.decode(in_);
      if (in_.overrun()) truncated();  // (zero bits past the end would decode as something)
      if (sym < 256) {
        if (sym < 0) corrupt("a bad literal/length code");
        w[out_++] = static_cast<std::uint8_t>(sym);
        continue;
      }
      if (sym == 256) break;
      if (sym > 285) corrupt("a literal/length code of the reserved symbols 286-287");
      const std::size_t len = kLenBase[sym - 257] + in_.take(kLenExtra[sym - 257]);
      const int dsym = dist.decode(in_);
      if (in_.overrun()) truncated();
      if (dsym < 0 || dsym > 29) corrupt(dsym < 0 ? "a bad distance code" : "a distance code of the reserved symbols 30-31");
      const std::size_t d = kDistBase[dsym] + in_.take(kDistExtra[dsym]);
      if (in_.overrun()) truncated();
      if (d > out_) corrupt("a match reaches back before the start of the data");
      std::uint8_t* dst = w + out_;
      const std::uint8_t* src = dst - d;
      if (d >= len) std::memcpy(dst, src, len);
      else
        for (std::size_t i = 0; i < len; ++i) dst[i] = src[i];  // overlapping: repeats the last d bytes
      out_ += len;
    }
  }

  const std::string& path_;
  BitReader& in_;
  Unfilter& sink_;
  std::vector<std::uint8_t> win_;
  std::size_t out_ = 0;     // bytes in win_
  std::size_t handed_ = 0;  // of which those given to the sink
  Adler32 adler_;
};

std::string png_kind(const PngHeader& p) {
  static const char* const kColor[7] = {"gray", "?", "RGB", "palette", "gray+alpha", "?", "RGBA"};
  return std::to_string(p.depth) + "-bit " + (p.color <= 6 ? kColor[p.color] : "?") +
         (p.interlace ? ", interlaced" : "");
}

// A whole PNG file decoded by the code above, its channels as stored (1 gray, 2 gray+alpha,
// 3 RGB, 4 RGBA; a tRNS chunk's colour key is ignored: it would only add an alpha channel,
// which decode_gray and decode_rgb drop).
HostImage decode_large_png(const std::string& path, const std::vector<std::uint8_t>& b) {
  check_png(path, b);  // every chunk inside the file up to IEND, IHDR and IDAT with correct CRCs
  PngHeader p;
  if (!png_header(b, p)) read_fail(path, "corrupt PNG (IHDR is not 13 bytes)");
  const std::string size = dims(p.w, p.h);
  if (p.w == 0 || p.h == 0 || p.w > kMaxPngSide || p.h > kMaxPngSide)
    read_fail(path, "corrupt PNG (size " + size + ")");
  const bool valid_depth = p.color == 0 ? (p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8 || p.depth == 16)
                           : p.color == 3 ? (p.depth == 1 || p.depth == 2 || p.depth == 4 || p.depth == 8)
                           : (p.color == 2 || p.color == 4 || p.color == 6) && (p.depth == 8 || p.depth == 16);
  if (!valid_depth || p.compression != 0 || p.filter != 0 || p.interlace > 1)
    read_fail(path, "corrupt PNG (bad IHDR: bit depth " + std::to_string(p.depth) + ", colour type " +
                        std::to_string(p.color) + ", methods " + std::to_string(p.compression) + "/" +
                        std::to_string(p.filter) + "/" + std::to_string(p.interlace) + ")");
  if (!p.own_decoder_reads())
    read_fail(path, "a PNG of " + size + " (" + png_kind(p) +
                        ") is too large for stb_image, and devmat's own decoder reads only 8-bit gray, "
                        "gray+alpha, RGB and RGBA PNGs without interlacing");
  // The IDAT chunks' data, in order; other critical chunks than PLTE refused as stb does.
  std::vector<BitReader::Span> spans;
  std::uint64_t compressed = 0;
  for (std::size_t pos = 8;;) {
    const std::size_t len = be32(&b[pos]);
    const std::string name = chunk_name(&b[pos + 4]);
    if (name == "IEND") break;
    if (name == "IDAT") spans.push_back({&b[pos + 8], len}), compressed += len;
    else if (std::isupper(b[pos + 4]) && name != "IHDR" && name != "PLTE")
      read_fail(path, "unsupported PNG (unknown critical chunk '" + name + "')");
    else if (name == "IHDR" && pos != 8) read_fail(path, "corrupt PNG (a second IHDR chunk)");
    pos += 12 + len;
  }
  if (spans.empty()) read_fail(path, "corrupt PNG (no IDAT chunk)");
  // Deflate expands at most 1032 to 1 (a 258-byte match in 2 bits): a header that declares more
  // than the data can hold is refused before the pixels are allocated.
  const std::uint64_t row_bytes = p.w * std::uint64_t(p.samples());
  const std::uint64_t filtered = mul_sat(p.h, row_bytes + 1);
  if (filtered / 1032 > compressed + 64)
    read_fail(path, "corrupt PNG (" + std::to_string(compressed) + " bytes of compressed data cannot hold " +
                        size + ")");
  HostImage img;
  img.rows = static_cast<Index>(p.h);
  img.cols = static_cast<Index>(p.w);
  img.channels = p.samples();
  try {
    img.pixels.resize(static_cast<std::size_t>(p.h * row_bytes));
  } catch (const std::exception&) {  // bad_alloc, or length_error past the vector's max_size
    read_fail(path, "out of memory for the pixels of a PNG of " + size + " (" + std::to_string(p.h * row_bytes) +
                        " bytes)");
  }
  BitReader in(std::move(spans));
  Unfilter rows(img.pixels.data(), p.h, static_cast<std::size_t>(row_bytes), static_cast<std::size_t>(p.samples()));
  Inflater(path, in, rows).run();
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
  if (f == Format::png && use_own_png_decoder(bytes)) return convert(decode_large_png(path, bytes), channels);
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
  Adler32 adler;
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
      adler.update(z.data() + from, z.size() - from);
    }
    pos += len;
    flush(false);
  }
  put_be32(z, adler.value());
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

HostImage decode_png_own(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  return decode_large_png(path, bytes);
}
void force_own_png_decoder(bool on) noexcept { g_force_own_png = on; }

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
