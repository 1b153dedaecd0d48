// Neighbourhood image operations on a 4096x4096 image, in megapixels per second, ours beside
// NVIDIA NPP in the same run (rows named "npp", built where CMake found NPP:
// DEVMAT_BENCH_HAVE_NPP). Erosion and dilation by square elements from 3x3 to 31x31, whose time
// should not depend on the side (van Herk / Gil-Werman; the one-kernel tile forced in each of its
// shapes beside, "ours-tile<rows>x<cols>", and for float the streaming kernel,
// "ours-stream[-s<rows>]");
// box filter, median (NPP's median reads
// a border around its ROI: it gets a replicated padded copy) and the integral image. Each NPP
// row first compares NPP's image with devmat's and reports the pixels that differ in the
// counter "differs" (0 expected for morphology, median and integral; the box filter's borders
// differ: NPP replicates, OpenCV and devmat reflect).
#include "dispatch/image_median.cuh"
#include "dispatch/image_morph.cuh"
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
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

template <class T>
std::size_t count_differences(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  const std::vector<T> va = a.to_vector(), vb = b.to_vector();
  std::size_t n = va.size() == vb.size() ? 0 : std::max(va.size(), vb.size());
  for (std::size_t i = 0; i < std::min(va.size(), vb.size()); ++i) n += !(va[i] == vb[i]);
  return n;
}

/// The image with r pixels replicated on each side, on the device.
template <class T>
DeviceMatrix<T> padded_image(int r) {
  const Index side = kSide + 2 * r;
  std::vector<T> p(static_cast<std::size_t>(side * side));
  const std::vector<T>& img = image<T>();
  for (Index y = 0; y < side; ++y)
    for (Index x = 0; x < side; ++x)
      p[y * side + x] = img[std::clamp<Index>(y - r, 0, kSide - 1) * kSide + std::clamp<Index>(x - r, 0, kSide - 1)];
  return DeviceMatrix<T>::from_vector(p, side, side);
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
    st.counters["differs"] = static_cast<double>(count_differences(out, morph(erode, img, k)));
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { npp_morph(erode, img, out, mask, k, ctx); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}
/// Row `impl` of the k x k erosion (erode) or dilation: launch(stream, in, out) on the benchmark's
/// image, compared with erode/dilate once before timing (counter "differs", 0 expected; a
/// difference skips the row with an error).
template <class T, class Launch>
void register_forced_morph(bool erode, int k, const std::string& impl, Launch launch) {
  const std::string op = std::string(erode ? "erode_" : "dilate_") + std::to_string(k) + "x" + std::to_string(k);
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, impl).c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
    DeviceMatrix<T> out(kSide, kSide, img.stream());
    const cudaStream_t s = img.stream().native();
    const auto run = [&] { launch(s, img.data(), out.data()); };
    run();
    const std::size_t differs = count_differences(out, morph(erode, img, k));
    st.counters["differs"] = static_cast<double>(differs);
    if (differs != 0) {
      st.SkipWithError((impl + " differs from erode/dilate").c_str());
      return;
    }
    b::time_on_stream(st, s, kPixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// morph_tile_kernel (both van Herk / Gil-Werman passes on a tile in shared memory) forced in
/// each of its tile shapes beside "ours" (the public function's choice), as
/// "ours-tile<rows>x<cols>", and with its block minima loading four words at a time (the
/// serial prefix/suffix chains' loads in flight) as "ours-tile<rows>x<cols>-b4".
template <class T>
void register_morph_tiles(bool erode, int k) {
  for (int tile = 0; tile < devmat::detail::kMorphTileShapes<T>; ++tile)
    for (int batch : {1, 4}) {
      const auto t = devmat::detail::morph_tile_shape<T>(tile);
      const std::string impl =
          "ours-tile" + std::to_string(t.rows) + "x" + std::to_string(t.cols) + (batch == 4 ? "-b4" : "");
      register_forced_morph<T>(erode, k, impl, [=](cudaStream_t s, const T* in, T* out) {
        if (erode) devmat::detail::launch_morph_tile<true>(s, in, kSide, out, kSide, kSide, kSide, k, k, tile, batch);
        else devmat::detail::launch_morph_tile<false>(s, in, kSide, out, kSide, kSide, kSide, k, k, tile, batch);
      });
    }
}

/// morph_stream_kernel (a block streams down a strip, the column pass in registers, the row
/// pass in shared memory) forced beside "ours", as "ours-stream" (the launcher's rows a block)
/// and "ours-stream-s<seg>" (seg output rows a block); morph_stream_doubling_kernel (its row
/// pass by doubling windows, up to 16 rows) as "ours-stream-dbl[-s<seg>]"; where the kernel has
/// an instance for exactly k rows (morph_stream_exact_rows, the launcher's default), its
/// run-time-rows instance beside it as "-rt" and (morph_stream_kernel) the one for exactly k x k
/// as "-sq" (MorphStreamExact); the exact instances (on forced segments too) also with their L2
/// prefetch (kPrefetch), "-pf".
template <class T>
void register_morph_stream(bool erode, int k) {
  // 17 rows: the segment morph_stream_segment took before session 28 (153: every resident slot
  // filled, 4 blocks on most SMs) beside the one it takes now (187: 3 an SM) and their neighbours.
  const std::vector<int> segs = k == 31 || k == 7 ? std::vector<int>{0, 64, 128, 256}
                                : k == 17         ? std::vector<int>{0, 153, 170, 187, 204, 306}
                                                  : std::vector<int>{0};
  using X = devmat::detail::MorphStreamExact;
  for (bool doubling : {false, true})
    for (int seg : segs)
      if (!doubling || k <= 16)  // the doubling kernel takes up to 16 rows
        for (auto exact : {X::rows, X::none, X::square}) {
          if (exact != X::rows && (seg || !devmat::detail::morph_stream_exact_rows(k, doubling))) continue;
          if (exact == X::square && doubling) continue;  // morph_stream_kernel's instances only
          const std::string impl = std::string(doubling ? "ours-stream-dbl" : "ours-stream") +
                                   (seg ? "-s" + std::to_string(seg) : "") +
                                   (exact == X::none ? "-rt" : exact == X::square ? "-sq" : "");
          register_forced_morph<T>(erode, k, impl, [=](cudaStream_t s, const T* in, T* out) {
            namespace dd = devmat::detail;
            if (erode) dd::launch_morph_stream<true>(s, in, kSide, out, kSide, kSide, kSide, k, k, seg, doubling, exact);
            else dd::launch_morph_stream<false>(s, in, kSide, out, kSide, kSide, kSide, k, k, seg, doubling, exact);
          });
          if (exact == X::none) continue;
          // The same instance with the L2 prefetch of the block of rows after next (kPrefetch).
          register_forced_morph<T>(erode, k, impl + "-pf", [=](cudaStream_t s, const T* in, T* out) {
            namespace dd = devmat::detail;
            if (erode) dd::launch_morph_stream<true, true>(s, in, kSide, out, kSide, kSide, kSide, k, k, seg, doubling, exact);
            else dd::launch_morph_stream<false, true>(s, in, kSide, out, kSide, kSide, kSide, k, k, seg, doubling, exact);
          });
        }
}

template <class T>
void register_median(int k) {
  const std::string op = "median_" + std::to_string(k) + "x" + std::to_string(k);
  const char* dt = b::dtype<T>();
  benchmark::RegisterBenchmark(b::name(op, dt, kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
    DeviceMatrix<T> out;
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { out = devmat::median_blur(img, k); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  benchmark::RegisterBenchmark(b::name(op, dt, kShape, "npp").c_str(), [=](benchmark::State& st) {
    const int r = k / 2;
    const auto padded = padded_image<T>(r);
    const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
    DeviceMatrix<T> out(kSide, kSide, padded.stream());
    const NppStreamContext ctx = b::npp_context(padded.stream().native());
    const NppiSize size = b::npp_size(kSide, kSide), mask{k, k};
    const NppiPoint anchor{r, r};
    Npp32u buffer_bytes = 0;
    if constexpr (std::is_same_v<T, float>)
      DEVMAT_BENCH_NPP(nppiFilterMedianGetBufferSize_32f_C1R_Ctx(size, mask, &buffer_bytes, ctx));
    else
      DEVMAT_BENCH_NPP(nppiFilterMedianGetBufferSize_8u_C1R_Ctx(size, mask, &buffer_bytes, ctx));
    const auto buffer = DeviceMatrix<std::uint8_t>(1, std::max<Index>(1, buffer_bytes), padded.stream());
    const int src_step = static_cast<int>(padded.cols() * sizeof(T)), dst_step = static_cast<int>(kSide * sizeof(T));
    const T* src = padded.data() + r * padded.cols() + r;
    const auto run = [&] {
      if constexpr (std::is_same_v<T, float>)
        DEVMAT_BENCH_NPP(nppiFilterMedian_32f_C1R_Ctx(src, src_step, out.data(), dst_step, size, mask, anchor,
                                                      const_cast<std::uint8_t*>(buffer.data()), ctx));
      else
        DEVMAT_BENCH_NPP(nppiFilterMedian_8u_C1R_Ctx(src, src_step, out.data(), dst_step, size, mask, anchor,
                                                     const_cast<std::uint8_t*>(buffer.data()), ctx));
    };
    run();
    st.counters["differs"] = static_cast<double>(count_differences(out, devmat::median_blur(img, k)));
    b::time_on_stream(st, padded.stream().native(), kPixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}

/// The median kernels' forms beside "ours" (the public function): "ours-single" (one output a
/// thread per row), "ours-pair" (pairs of adjacent rows sharing their windows' common values)
/// and, f32 5x5 only, "ours-quad" (2 x 2 blocks sharing a 4 x 4 core).
/// Each is compared with median_blur once before timing (counter "differs", 0 expected; a
/// difference skips the row with an error).
template <class T>
void register_median_forms(int k) {
  const std::string op = "median_" + std::to_string(k) + "x" + std::to_string(k);
  const int forms = std::is_same_v<T, float> && k == 5 ? 3 : 2;
  for (int form = 0; form < forms; ++form)
    benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, form == 2 ? "ours-quad" : form ? "ours-pair" : "ours-single").c_str(),
                                 [=](benchmark::State& st) {
                                   const auto img = DeviceMatrix<T>::from_vector(image<T>(), kSide, kSide);
                                   DeviceMatrix<T> out(kSide, kSide, img.stream());
                                   const cudaStream_t s = img.stream().native();
                                   const bool pair = form == 1;
                                   const auto run = [&] {
                                     if constexpr (std::is_same_v<T, float>)
                                       if (form == 2) return devmat::detail::launch_median_f32_quad(s, img.data(), kSide, out.data(), kSide, kSide);
                                     if (k == 3) devmat::detail::launch_median<3>(s, img.data(), kSide, out.data(), kSide, kSide, pair);
                                     else if (k == 5) devmat::detail::launch_median<5>(s, img.data(), kSide, out.data(), kSide, kSide, pair);
                                     else if constexpr (std::is_same_v<T, std::uint8_t>)
                                       devmat::detail::launch_median<7>(s, img.data(), kSide, out.data(), kSide, kSide, pair);
                                   };
                                   run();
                                   const std::size_t differs = count_differences(out, devmat::median_blur(img, k));
                                   st.counters["differs"] = static_cast<double>(differs);
                                   if (differs != 0) {
                                     st.SkipWithError("form differs from median_blur");
                                     return;
                                   }
                                   b::time_on_stream(st, s, kPixels, b::kMpixps, run);
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
}

void register_box(int k) {
  const std::string op = "box_" + std::to_string(k) + "x" + std::to_string(k);
  benchmark::RegisterBenchmark(b::name(op, "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    DeviceMatrix<std::uint8_t> out;
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { out = devmat::box_filter(img, k, k); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  benchmark::RegisterBenchmark(b::name(op, "u8", kShape, "npp").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    DeviceMatrix<std::uint8_t> out(kSide, kSide, img.stream());
    const NppStreamContext ctx = b::npp_context(img.stream().native());
    const NppiSize size = b::npp_size(kSide, kSide), mask{k, k};
    const NppiPoint anchor{k / 2, k / 2}, offset{0, 0};
    const auto run = [&] {
      DEVMAT_BENCH_NPP(nppiFilterBoxBorder_8u_C1R_Ctx(img.data(), kSide, size, offset, out.data(), kSide, size, mask,
                                                      anchor, NPP_BORDER_REPLICATE, ctx));
    };
    run();
    st.counters["differs"] = static_cast<double>(count_differences(out, devmat::box_filter(img, k, k)));
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}

void register_integral() {
  benchmark::RegisterBenchmark(b::name("integral", "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    DeviceMatrix<std::int32_t> out;
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { out = devmat::integral(img); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  benchmark::RegisterBenchmark(b::name("integral", "u8", kShape, "npp").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    DeviceMatrix<std::int32_t> out(kSide + 1, kSide + 1, img.stream());
    const NppStreamContext ctx = b::npp_context(img.stream().native());
    const auto run = [&] {
      DEVMAT_BENCH_NPP(nppiIntegral_8u32s_C1R_Ctx(img.data(), kSide, out.data(), (kSide + 1) * 4, b::npp_size(kSide, kSide),
                                                  0, ctx));
    };
    run();
    st.counters["differs"] = static_cast<double>(count_differences(out, devmat::integral(img)));
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}
void register_canny() {
  // A smooth image (noise under a 9x9 box), so that edges are long and hysteresis has work.
  // canny: rounds on bit planes (a wait for the flag every 4 rounds), the ring pieces'
  // components past 4 rounds.
  benchmark::RegisterBenchmark(b::name("canny_5_15", "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto noise = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    const auto img = devmat::box_filter(noise, 9, 9);
    DeviceMatrix<std::uint8_t> out;
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, [&] { out = devmat::canny(img, 5, 15); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  benchmark::RegisterBenchmark(b::name("canny_5_15", "u8", kShape, "npp").c_str(), [=](benchmark::State& st) {
    const auto noise = DeviceMatrix<std::uint8_t>::from_vector(image<std::uint8_t>(), kSide, kSide);
    const auto img = devmat::box_filter(noise, 9, 9);
    DeviceMatrix<std::uint8_t> out(kSide, kSide, img.stream());
    const NppStreamContext ctx = b::npp_context(img.stream().native());
    const NppiSize size = b::npp_size(kSide, kSide);
    int buffer_bytes = 0;
    DEVMAT_BENCH_NPP(nppiFilterCannyBorderGetBufferSize(size, &buffer_bytes));
    const auto buffer = DeviceMatrix<std::uint8_t>(1, std::max(1, buffer_bytes), img.stream());
    const auto run = [&] {
      DEVMAT_BENCH_NPP(nppiFilterCannyBorder_8u_C1R_Ctx(img.data(), kSide, size, NppiPoint{0, 0}, out.data(), kSide, size,
                                                        NPP_FILTER_SOBEL, NPP_MASK_SIZE_3_X_3, 5, 15, nppiNormL1,
                                                        NPP_BORDER_REPLICATE, const_cast<std::uint8_t*>(buffer.data()), ctx));
    };
    run();
    st.counters["differs"] = static_cast<double>(count_differences(out, devmat::canny(img, 5, 15)));
    b::time_on_stream(st, img.stream().native(), kPixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}
}  // namespace

int main(int argc, char** argv) {
  // Erosion and dilation across the span of the size-independence target (3x3 .. 31x31).
  for (int k : {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31}) register_morph<std::uint8_t>(false, k);
  for (int k : {3, 7, 15, 31}) register_morph<std::uint8_t>(true, k);
  for (int k : {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31}) register_morph<float>(true, k);
  for (int k : {3, 5, 7, 15, 31}) register_morph_tiles<std::uint8_t>(false, k);
  register_morph_tiles<std::uint8_t>(true, 31);
  for (int k : {3, 5, 7, 15, 31}) register_morph_tiles<float>(true, k);
  for (int k : {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31}) register_morph_stream<std::uint8_t>(false, k);
  for (int k : {3, 5, 7, 9, 11, 13, 15, 17, 21, 25, 31}) register_morph_stream<float>(true, k);
  for (int k : {3, 5, 7}) register_median<std::uint8_t>(k);
  for (int k : {3, 5}) register_median<float>(k);
  for (int k : {3, 5, 7}) register_median_forms<std::uint8_t>(k);
  for (int k : {3, 5}) register_median_forms<float>(k);
  for (int k : {3, 5, 15}) register_box(k);
  register_integral();
  register_canny();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
