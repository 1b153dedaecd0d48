// Neighbourhood image operations on a 4096x4096 image, in megapixels per second, ours beside
// NVIDIA NPP in the same run (rows named "npp", built where CMake found NPP:
// DEVMAT_BENCH_HAVE_NPP). Erosion and dilation by square elements from 3x3 to 31x31, whose time
// should not depend on the side (van Herk / Gil-Werman). Each NPP row first checks that NPP and
// devmat give the same image (NPP's replicated border equals OpenCV's ignored one for min/max).
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#if DEVMAT_BENCH_HAVE_NPP
#include "npp_support.hpp"
#endif

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;

constexpr Index kSide = 4096;
const std::string kShape = std::to_string(kSide) + "x" + std::to_string(kSide);
constexpr double kPixels = static_cast<double>(kSide * kSide);

template <class T>
const std::vector<T>& image() {
  static const std::vector<T> img = [] {
    std::mt19937 gen(1234);
    std::vector<T> v(static_cast<std::size_t>(kSide * kSide));
    if constexpr (std::is_same_v<T, float>) {
      std::uniform_real_distribution<float> d(0.f, 1.f);
      for (T& x : v) x = d(gen);
    } else {
      std::uniform_int_distribution<int> d(0, 255);
      for (T& x : v) x = static_cast<T>(d(gen));
    }
    return v;
  }();
  return img;
}

template <class T>
DeviceMatrix<T> morph(bool erode, const DeviceMatrix<T>& img, int k) {
  return erode ? devmat::erode(img, k, k) : devmat::dilate(img, k, k);
}

#if DEVMAT_BENCH_HAVE_NPP
/// NPP's erosion or dilation of the whole image by a k x k element of ones, border replicated.
template <class T>
void npp_morph(bool erode, const DeviceMatrix<T>& img, DeviceMatrix<T>& out, const DeviceMatrix<std::uint8_t>& mask, int k,
               const NppStreamContext& ctx) {
  const NppiSize size = b::npp_size(img.rows(), img.cols());
  const int step = static_cast<int>(img.cols() * sizeof(T));
  const NppiSize mask_size{k, k};
  const NppiPoint anchor{k / 2, k / 2}, offset{0, 0};
  if constexpr (std::is_same_v<T, float>) {
    if (erode)
      DEVMAT_BENCH_NPP(nppiErodeBorder_32f_C1R_Ctx(img.data(), step, size, offset, out.data(), step, size, mask.data(),
                                                   mask_size, anchor, NPP_BORDER_REPLICATE, ctx));
    else
      DEVMAT_BENCH_NPP(nppiDilateBorder_32f_C1R_Ctx(img.data(), step, size, offset, out.data(), step, size, mask.data(),
                                                    mask_size, anchor, NPP_BORDER_REPLICATE, ctx));
  } else {
    if (erode)
      DEVMAT_BENCH_NPP(nppiErodeBorder_8u_C1R_Ctx(img.data(), step, size, offset, out.data(), step, size, mask.data(),
                                                  mask_size, anchor, NPP_BORDER_REPLICATE, ctx));
    else
      DEVMAT_BENCH_NPP(nppiDilateBorder_8u_C1R_Ctx(img.data(), step, size, offset, out.data(), step, size, mask.data(),
                                                   mask_size, anchor, NPP_BORDER_REPLICATE, ctx));
  }
}
#endif

template <class T>
void register_morph(bool erode, int k) {
  const std::string op = std::string(erode ? "erode_" : "dilate_") + std::to_string(k) + "x" + std::to_string(k);
  const char* dt = b::dtype<T>();
  benchmark::RegisterBenchmark(b::name(op, dt, kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
    DeviceMatrix<T> out;
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { out = morph(erode, img, k); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  benchmark::RegisterBenchmark(b::name(op, dt, kShape, "npp").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
    const auto mask = DeviceMatrix<std::uint8_t>::constant(k, k, 1);
    DeviceMatrix<T> out(kSide, kSide, img.stream());
    const NppStreamContext ctx = b::npp_context(img.stream().native());
    npp_morph(erode, img, out, mask, k, ctx);
    if (out.to_vector() != morph(erode, img, k).to_vector()) {
      st.SkipWithError("NPP and devmat give different images");
      return;
    }
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { npp_morph(erode, img, out, mask, k, ctx); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}
}  // namespace

int main(int argc, char** argv) {
  for (int k : {3, 7, 15, 31}) register_morph<std::uint8_t>(false, k);
  for (int k : {3, 31}) register_morph<std::uint8_t>(true, k);
  for (int k : {3, 15, 31}) register_morph<float>(true, k);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
