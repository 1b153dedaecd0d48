// Image I/O when libdevmat was built without stb: every call says so.
#include <devmat/error.hpp>
#include <devmat/image.hpp>

namespace devmat {
namespace {
[[noreturn]] void off(const std::string& path) {
  throw io_error("devmat: " + path +
                 ": image I/O is not available: libdevmat was built without stb_image "
                 "(install libstb-dev or pass -DDEVMAT_STB_DIR=<dir> and rebuild)");
}
}  // namespace

bool image_io_available() noexcept { return false; }
Image8 load_gray(const std::string& path) { off(path); }
Image8 load_gray(const std::string& path, const Stream&) { off(path); }
Rgb8 load_rgb(const std::string& path) { off(path); }
Rgb8 load_rgb(const std::string& path, const Stream&) { off(path); }
void save_image(const std::string& path, const MatrixView<const std::uint8_t>&) { off(path); }
void save_image(const std::string& path, const Rgb8&) { off(path); }
ImageShape read_image(const std::string& path, int, PinnedBuffer<std::uint8_t>&) { off(path); }
ImageShape read_image(const std::string& path, int, std::vector<std::uint8_t>&) { off(path); }
void write_image(const std::string& path, const std::uint8_t*, Index, Index, int) { off(path); }
}  // namespace devmat
