// Image I/O through the device: save_image then load_gray / load_rgb round trips on awkward
// shapes, the streams results land on, and rgb <-> gray conversions. (The file side, with no
// GPU, is test/test_image_io.cpp.) Without stb every call must throw io_error saying so, and
// the cases that need image I/O are reported as skipped.
#include "support/util.hpp"

#include <unistd.h>

#include <array>
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
