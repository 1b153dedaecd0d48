// Image I/O through the device: save_image then load_gray / load_rgb round trips on awkward
// shapes, the streams results land on, and rgb <-> gray conversions. (The file side, with no
// GPU, is test/test_image_io.cpp.) Without stb every call must throw io_error saying so, and
// the cases that need image I/O are reported as skipped.
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <filesystem>
#include <string>
#include <vector>

using namespace devmat;
using namespace devmat::test;
namespace fs = std::filesystem;

namespace {
using H8 = HostMatrix<std::uint8_t>;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "devmat-image-gpu-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

/// The bytes of a file.
std::vector<std::uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Plane k of rows x cols interleaved 3-channel bytes, on the CPU: the reference of the split.
H8 plane_of(const std::vector<std::uint8_t>& interleaved, Index rows, Index cols, int k) {
  H8 p(rows, cols);
  for (Index i = 0; i < rows * cols; ++i) p.data()[i] = interleaved[static_cast<std::size_t>(3 * i + k)];
  return p;
}

/// 0.299 R + 0.587 G + 0.114 B rounded half up, exactly.
H8 luma_ref(const H8& r, const H8& g, const H8& b) {
  H8 out(r.rows(), r.cols());
  for (Index i = 0; i < r.size(); ++i)
    out.data()[i] = static_cast<std::uint8_t>((299 * r.data()[i] + 587 * g.data()[i] + 114 * b.data()[i] + 500) / 1000);
  return out;
}
}  // namespace

TEST_CASE("without stb, image I/O throws io_error saying so", "[image]") {
  if (image_io_available()) DEVMAT_SKIP("libdevmat was built with image I/O: this case is for builds without stb");
  const auto img = to_device(random_matrix<std::uint8_t>(3, 3, 0, 255));
  const Rgb8 rgb = {img, img, img};
  const Stream s = Stream::create();
  CHECK_THROWS_AS(load_gray("x.png"), io_error);
  CHECK_THROWS_AS(load_gray("x.png", s), io_error);
  CHECK_THROWS_AS(load_rgb("x.png"), io_error);
  CHECK_THROWS_AS(load_rgb("x.png", s), io_error);
  CHECK_THROWS_AS(save_image("x.png", img), io_error);
  CHECK_THROWS_AS(save_image("x.png", rgb), io_error);
  CHECK_THROWS_WITH(load_gray("x.png"), contains("not available"));
  CHECK_THROWS_WITH(load_rgb("x.png", s), contains("not available"));
  CHECK_THROWS_WITH(save_image("x.png", img), contains("not available"));
  CHECK_THROWS_WITH(save_image("x.png", rgb), contains("not available"));
}

TEST_CASE("gray round trips through PNG and PGM are exact", "[image]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  for (auto [r, c] : awkward_shapes(4, 300)) {
    if (r * c == 0) continue;
    for (const char* ext : {".png", ".pgm", ".ppm"}) {
      CAPTURE(shape(r, c), ext);
      const H8 h = random_matrix<std::uint8_t>(r, c, 0, 255);
      const std::string path = dir / ("g" + std::string(ext));
      save_image(path, to_device(h));
      const Image8 back = load_gray(path);
      CHECK(to_eigen(back) == h);
      const Rgb8 rgb = load_rgb(path);  // a gray file: three equal planes
      for (const Image8& plane : rgb) CHECK(to_eigen(plane) == h);
    }
  }
}

TEST_CASE("save_image writes a region of interest, read in place", "[image][views]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const H8 h = random_matrix<std::uint8_t>(61, 97, 0, 255);
  const Image8 img = to_device(h);
  for (const auto& w : std::vector<std::array<Index, 4>>{{3, 5, 40, 33}, {0, 96, 61, 1}, {60, 0, 1, 97}}) {
    CAPTURE(w[0], w[1], w[2], w[3]);
    const std::string path = dir / "roi.png";
    save_image(path, img.block(w[0], w[1], w[2], w[3]));
    CHECK(to_eigen(load_gray(path)) == H8(h.block(w[0], w[1], w[2], w[3])));
  }
  CHECK_THROWS_AS(save_image(dir / "empty.png", img.block(0, 0, 0, 3)), io_error);
}

TEST_CASE("colour round trips through PNG and PPM are exact; to PGM they become luma", "[image]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const Stream s = Stream::create();
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 17}, {17, 1}, {33, 31}, {129, 257}}) {
    CAPTURE(shape(r, c));
    const H8 hr = random_matrix<std::uint8_t>(r, c, 0, 255);
    const H8 hg = random_matrix<std::uint8_t>(r, c, 0, 255);
    const H8 hb = random_matrix<std::uint8_t>(r, c, 0, 255);
    const Rgb8 rgb = {to_device(hr), to_device(hg), to_device(hb)};
    for (const char* ext : {".png", ".ppm"}) {
      const std::string path = dir / ("c" + std::string(ext));
      save_image(path, rgb);
      const Rgb8 back = load_rgb(path, s);
      for (int k = 0; k < 3; ++k) CHECK(back[k].stream() == s);
      CHECK(to_eigen(back[0]) == hr);
      CHECK(to_eigen(back[1]) == hg);
      CHECK(to_eigen(back[2]) == hb);
      const Image8 gray = load_gray(path, s);
      CHECK(gray.stream() == s);
      CHECK(to_eigen(gray) == luma_ref(hr, hg, hb));
    }
    save_image(dir / "c.pgm", rgb);
    CHECK(to_eigen(load_gray(dir / "c.pgm")) == luma_ref(hr, hg, hb));
  }
}

TEST_CASE("a loaded image feeds the filters", "[image]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const H8 h = random_matrix<std::uint8_t>(200, 300, 0, 255);
  save_image(dir / "in.png", to_device(h));
  const DeviceMatrix<float> f = load_gray(dir / "in.png").cast<float>();
  const DeviceMatrix<float> blurred = gaussian_blur(f, 1.5f);
  const Image8 edges = sobel(blurred).threshold(20.f);
  save_image(dir / "edges.png", edges);
  CHECK(to_eigen(load_gray(dir / "edges.png")) == to_eigen(edges));
  CHECK(to_eigen(f) == HostMatrix<float>(h.cast<float>()));
}

TEST_CASE("failed loads and saves throw io_error and write nothing", "[image]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const auto img = to_device(random_matrix<std::uint8_t>(8, 8, 0, 255));
  CHECK_THROWS_AS(load_gray(dir / "missing.png", Stream::per_thread()), io_error);
  CHECK_THROWS_AS(load_rgb(dir / "missing.png", Stream::per_thread()), io_error);
  CHECK_THROWS_AS(save_image(dir / "x.jpg", img), io_error);
  CHECK_THROWS_AS(save_image(dir / "no/such/folder/x.png", img), io_error);
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("read_image and write_image are load and save without the device: same bytes, same errors", "[image][pinned]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  PinnedBuffer<std::uint8_t> buf;
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 29}, {31, 1}, {257, 263}, {1080, 1920}}) {
    CAPTURE(shape(r, c));
    const H8 h = random_matrix<std::uint8_t>(r, 3 * c, 0, 255);  // interleaved R, G, B
    const std::vector<std::uint8_t> bytes(h.data(), h.data() + h.size());
    const H8 hr = plane_of(bytes, r, c, 0), hg = plane_of(bytes, r, c, 1), hb = plane_of(bytes, r, c, 2);
    for (const char* ext : {".png", ".ppm"}) {
      CAPTURE(ext);
      const std::string path = dir / ("w" + std::string(ext));
      write_image(path, bytes.data(), r, c, 3);
      const ImageShape s3 = read_image(path, 3, buf);
      CHECK(s3.rows == r);
      CHECK(s3.cols == c);
      CHECK(s3.channels == 3);
      REQUIRE(buf.size() == bytes.size());
      CHECK(std::equal(buf.begin(), buf.end(), bytes.begin()));
      std::vector<std::uint8_t> vec;  // the same into ordinary host memory
      CHECK(read_image(path, 3, vec).cols == c);
      CHECK(vec == bytes);
      const ImageShape s1 = read_image(path, 1, buf);  // luma, as load_gray
      CHECK(s1.channels == 1);
      REQUIRE(buf.size() == static_cast<std::size_t>(r * c));
      const H8 luma = luma_ref(hr, hg, hb);
      CHECK(std::equal(buf.begin(), buf.end(), luma.data()));
      const Rgb8 planes = load_rgb(path);  // the same file through the device's split
      CHECK(to_eigen(planes[0]) == hr);
      CHECK(to_eigen(planes[1]) == hg);
      CHECK(to_eigen(planes[2]) == hb);
    }
    write_image(dir / "g.pgm", hr.data(), r, c, 1);
    CHECK(to_eigen(load_gray(dir / "g.pgm")) == hr);
  }
  const std::uint8_t px[3] = {1, 2, 3};
  CHECK_THROWS_AS(read_image(dir / "w.png", 2, buf), std::invalid_argument);
  CHECK_THROWS_AS(read_image(dir / "missing.png", 3, buf), io_error);
  CHECK_THROWS_AS(write_image(dir / "x.png", px, 1, 1, 4), std::invalid_argument);
  CHECK_THROWS_AS(write_image(dir / "x.png", nullptr, 1, 1, 3), std::invalid_argument);
  CHECK_THROWS_AS(write_image(dir / "x.png", px, 0, 1, 3), io_error);
  CHECK_THROWS_AS(write_image(dir / "x.jpg", px, 1, 1, 3), io_error);
  CHECK_FALSE(fs::exists(dir / "x.png"));
  CHECK_FALSE(fs::exists(dir / "x.jpg"));
}

TEST_CASE("RGB through the device both ways: load -> save -> load is bitwise, the file too", "[image][color]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const Stream s1 = Stream::create(), s2 = Stream::create(), s3 = Stream::create();
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1, 1}, {1, 31}, {33, 1}, {127, 129}, {1081, 1919}}) {
    CAPTURE(shape(r, c));
    const H8 h = random_matrix<std::uint8_t>(r, 3 * c, 0, 255);
    const std::vector<std::uint8_t> bytes(h.data(), h.data() + h.size());
    const std::string src = dir / "src.ppm";
    write_image(src, bytes.data(), r, c, 3);
    const std::vector<std::uint8_t> src_file = file_bytes(src);

    const Rgb8 rgb = load_rgb(src, s1);  // uploaded interleaved, split on the device
    CHECK(to_eigen(rgb[0]) == plane_of(bytes, r, c, 0));
    CHECK(to_eigen(rgb[1]) == plane_of(bytes, r, c, 1));
    CHECK(to_eigen(rgb[2]) == plane_of(bytes, r, c, 2));

    save_image(dir / "back.ppm", rgb);  // merged on the device, one copy down
    CHECK(file_bytes(dir / "back.ppm") == src_file);
    save_image(dir / "back.png", rgb);
    PinnedBuffer<std::uint8_t> buf;
    read_image(dir / "back.png", 3, buf);
    CHECK(std::equal(buf.begin(), buf.end(), bytes.begin(), bytes.end()));
    const Rgb8 again = load_rgb(dir / "back.png", s1);
    for (int k = 0; k < 3; ++k) CHECK(to_eigen(again[k]) == to_eigen(rgb[k]));

    // Planes on three streams, G's values still queued behind other work: the save waits for
    // them (on the device) and reads every plane's final values.
    Rgb8 mixed = {DeviceMatrix<std::uint8_t>(rgb[0]), DeviceMatrix<std::uint8_t>(r, c, s2),
                  DeviceMatrix<std::uint8_t>(r, c, s3)};
    const H8 hg = plane_of(bytes, r, c, 1), hb = plane_of(bytes, r, c, 2);
    spin(s2.native(), 30);
    mixed[1].copy_from_host_async(hg.data());
    mixed[2].copy_from_host_async(hb.data());
    save_image(dir / "mixed.ppm", mixed);
    CHECK(file_bytes(dir / "mixed.ppm") == src_file);
  }
}

TEST_CASE("save_image of RGB planes of different shapes is a shape_error and writes nothing", "[image][color][errors]") {
  if (!image_io_available()) DEVMAT_SKIP("libdevmat was built without image I/O (no stb)");
  TempDir dir;
  const auto a = to_device(random_matrix<std::uint8_t>(5, 7, 0, 255));
  const auto b = to_device(random_matrix<std::uint8_t>(5, 6, 0, 255));
  CHECK_THROWS_AS(save_image(dir / "x.png", Rgb8{a, a, b}), shape_error);
  CHECK_THROWS_AS(save_image(dir / "x.png", Rgb8{a, b, a}), shape_error);
  CHECK_THROWS_AS(save_image(dir / "x.png", Rgb8{Image8(), Image8(), Image8()}), io_error);
  CHECK(fs::is_empty(dir.path));
}
