// Candidate kernels (src/kernels/image_next.cuh) for the small-kernel image operations that lose
// to NVIDIA NPP at 4096x4096, in megapixels per second. Each op has three rows in one run:
// "ours" (the public function as dispatched today), "ours-next" (the candidate: output
// allocated from the pool and the kernel launched, as the public function would do) and "npp"
// (where CMake found NPP; the same calls as bench_image_neigh / bench_image_ops / bench_filter).
// The fused u8 box and morphology kernels have two more rows, "ours-next-r4" and
// "ours-next-r16": 4 and 16 output rows a thread instead of 8.
// Before timing, the candidate's output is compared with the public function's once: a u8
// candidate must be identical (else the row is skipped with an error), filter2d within 1e-5 of
// the output's range (the sums run in another order). The counter "differs" / "max_rel_diff"
// reports that comparison.
#include "dispatch/image_canny.cuh"
#include "dispatch/image_next.cuh"
#include "random.cuh"
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if DEVMAT_BENCH_HAVE_NPP
#include "npp_support.hpp"
#endif

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
using U8 = std::uint8_t;
namespace b = devmat::bench;
namespace d = devmat::detail;

constexpr Index kSide = 4096;
const std::string kShape = std::to_string(kSide) + "x" + std::to_string(kSide);
constexpr double kPixels = static_cast<double>(kSide * kSide);

template <class T>
const DeviceMatrix<T>& input() {
  static const DeviceMatrix<T> img = b::random_matrix<T>(kSide, kSide, 99);
  return img;
}
const std::array<DeviceMatrix<U8>, 3>& rgb_planes() {
  static const std::array<DeviceMatrix<U8>, 3> p = {b::random_matrix<U8>(kSide, kSide, 1), b::random_matrix<U8>(kSide, kSide, 2),
                                                    b::random_matrix<U8>(kSide, kSide, 3)};
  return p;
}

template <class T>
double differs(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  const std::vector<T> x = a.to_vector(), y = b.to_vector();
  if constexpr (std::is_same_v<T, float>) {
    float lo = INFINITY, hi = -INFINITY;
    double m = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      lo = std::min(lo, y[i]);
      hi = std::max(hi, y[i]);
      m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
      if (std::isnan(x[i])) return INFINITY;
    }
    return m / std::max(1e-30, static_cast<double>(hi - lo));
  } else {
    double n = 0;
    for (std::size_t i = 0; i < x.size(); ++i) n += x[i] != y[i];
    return n;
  }
}

/// Row "ours-<variant>" of one op: next(out) is the candidate writing into a fresh kSide x kSide
/// `out`, compared once with ours() (the public function) before timing.
template <class T>
void register_variant(const std::string& op, const std::string& impl, std::function<DeviceMatrix<T>()> ours,
                      std::function<void(DeviceMatrix<T>&)> next) {
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, impl).c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    DeviceMatrix<T> check(kSide, kSide);
    next(check);
    const double diff = differs(check, ours());
    const bool exact = !std::is_same_v<T, float>;
    st.counters[exact ? "differs" : "max_rel_diff"] = diff;
    if (exact ? diff != 0 : !(diff <= 1e-5)) {
      st.SkipWithError(("candidate differs from ours: " + std::to_string(diff)).c_str());
      return;
    }
    DeviceMatrix<T> out;
    b::time_on_stream(st, s, kPixels, b::kMpixps, [&] {
      out = DeviceMatrix<T>(kSide, kSide);
      next(out);
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// Rows "ours" (the public function) and "ours-next" (the candidate) of one op.
template <class T>
void register_pair(const std::string& op, std::function<DeviceMatrix<T>()> ours,
                   std::function<void(DeviceMatrix<T>&)> next) {
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, "ours").c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    DeviceMatrix<T> out;
    b::time_on_stream(st, s, kPixels, b::kMpixps, [&] { out = ours(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_variant<T>(op, "ours-next", ours, next);
}

#if DEVMAT_BENCH_HAVE_NPP
template <class T>
void register_npp(const std::string& op, std::function<void(DeviceMatrix<T>&, const NppStreamContext&)> npp) {
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, "npp").c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    DeviceMatrix<T> out(kSide, kSide);
    const NppStreamContext ctx = b::npp_context(s);
    b::time_on_stream(st, s, kPixels, b::kMpixps, [&] { npp(out, ctx); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
constexpr int kStepU8 = static_cast<int>(kSide);
constexpr int kStepF32 = static_cast<int>(kSide * 4);
#endif

cudaStream_t stream_of(const DeviceMatrix<U8>& m) { return m.stream().native(); }

void register_box(int k) {
  const std::string op = "box_" + std::to_string(k) + "x" + std::to_string(k);
  const auto ours = [k] { return devmat::box_filter(input<U8>(), k, k); };
  benchmark::RegisterBenchmark(b::name(op, "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    DeviceMatrix<U8> out;
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] { out = ours(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  // "ours-next": 8 output rows a thread; "-r4", "-r16": 4 and 16 (registers against halo re-reads).
  for (int rpt : {8, 4, 16})
    register_variant<U8>(op, rpt == 8 ? "ours-next" : "ours-next-r" + std::to_string(rpt), ours,
                         [k, rpt](DeviceMatrix<U8>& out) {
                           const auto& in = input<U8>();
                           d::launch_box_u8_next(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, rpt);
                         });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>(op, [k](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    DEVMAT_BENCH_NPP(nppiFilterBoxBorder_8u_C1R_Ctx(input<U8>().data(), kStepU8, b::npp_size(kSide, kSide), NppiPoint{0, 0},
                                                    out.data(), kStepU8, b::npp_size(kSide, kSide), NppiSize{k, k},
                                                    NppiPoint{k / 2, k / 2}, NPP_BORDER_REPLICATE, ctx));
  });
#endif
}

void register_morph(bool erode, int k) {
  const std::string op = std::string(erode ? "erode_" : "dilate_") + std::to_string(k) + "x" + std::to_string(k);
  const auto ours = [=] { return erode ? devmat::erode(input<U8>(), k, k) : devmat::dilate(input<U8>(), k, k); };
  benchmark::RegisterBenchmark(b::name(op, "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    DeviceMatrix<U8> out;
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] { out = ours(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  for (int rpt : {8, 4, 16})
    register_variant<U8>(op, rpt == 8 ? "ours-next" : "ours-next-r" + std::to_string(rpt), ours, [=](DeviceMatrix<U8>& out) {
      const auto& in = input<U8>();
      if (erode) d::launch_morph_u8_next<true>(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, rpt);
      else d::launch_morph_u8_next<false>(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, rpt);
    });
#if DEVMAT_BENCH_HAVE_NPP
  const auto mask_ptr = std::make_shared<const DeviceMatrix<U8>>(DeviceMatrix<U8>::constant(k, k, 1));
  register_npp<U8>(op, [=](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    const DeviceMatrix<U8>& mask = *mask_ptr;
    const NppiSize size = b::npp_size(kSide, kSide);
    if (erode)
      DEVMAT_BENCH_NPP(nppiErodeBorder_8u_C1R_Ctx(input<U8>().data(), kStepU8, size, NppiPoint{0, 0}, out.data(), kStepU8,
                                                  size, mask.data(), NppiSize{k, k}, NppiPoint{k / 2, k / 2},
                                                  NPP_BORDER_REPLICATE, ctx));
    else
      DEVMAT_BENCH_NPP(nppiDilateBorder_8u_C1R_Ctx(input<U8>().data(), kStepU8, size, NppiPoint{0, 0}, out.data(), kStepU8,
                                                   size, mask.data(), NppiSize{k, k}, NppiPoint{k / 2, k / 2},
                                                   NPP_BORDER_REPLICATE, ctx));
  });
#endif
}

/// A 5x5 kernel of positive weights summing to 1 (bench_filter's box_like_kernel(5)).
std::vector<float> weights5() {
  std::mt19937 gen(7u + 5);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<float> w(25);
  float sum = 0;
  for (float& x : w) sum += x = dist(gen);
  for (float& x : w) x /= sum;
  return w;
}

void register_filter2d() {
  register_pair<float>("filter2d_5x5",
                       [] {
                         thread_local const auto kernel = DeviceMatrix<float>::from_vector(weights5(), 5, 5);
                         return devmat::filter2d(input<float>(), kernel);
                       },
                       [](DeviceMatrix<float>& out) {
                         thread_local const std::vector<float> w = weights5();
                         const auto& in = input<float>();
                         d::launch_filter2d_5x5_next(in.stream().native(), in.data(), kSide, out.data(), kSide, kSide, kSide,
                                                     w.data());
                       });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<float>("filter2d_5x5", [](DeviceMatrix<float>& out, const NppStreamContext& ctx) {
    thread_local const auto kernel = [] {
      const std::vector<float> w = weights5();
      return DeviceMatrix<float>::from_vector(std::vector<float>(w.rbegin(), w.rend()), 5, 5);  // NPP convolves
    }();
    DEVMAT_BENCH_NPP(nppiFilterBorder_32f_C1R_Ctx(input<float>().data(), kStepF32, b::npp_size(kSide, kSide), NppiPoint{0, 0},
                                                  out.data(), kStepF32, b::npp_size(kSide, kSide), kernel.data(),
                                                  NppiSize{5, 5}, NppiPoint{2, 2}, NPP_BORDER_REPLICATE, ctx));
  });
#endif
}

void register_threshold() {
  register_pair<U8>("threshold_trunc", [] { return devmat::threshold(input<U8>(), 128, 255, devmat::Threshold::trunc); },
                    [](DeviceMatrix<U8>& out) {
                      const auto& in = input<U8>();
                      d::launch_threshold_u8_next(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, 128, 255,
                                                  d::kThTrunc);
                    });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>("threshold_trunc", [](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    DEVMAT_BENCH_NPP(nppiThreshold_8u_C1R_Ctx(input<U8>().data(), kStepU8, out.data(), kStepU8, b::npp_size(kSide, kSide), 128,
                                              NPP_CMP_GREATER, ctx));
  });
#endif
}

void register_gray() {
  register_pair<U8>("rgb_to_gray", [] { return devmat::rgb_to_gray(rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]); },
                    [](DeviceMatrix<U8>& out) {
                      const auto& p = rgb_planes();
                      d::launch_rgb_to_gray_u8_next(stream_of(p[0]), p[0].data(), kSide, p[1].data(), kSide, p[2].data(),
                                                    kSide, out.data(), kSide, kSide, kSide);
                    });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>("rgb_to_gray", [](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    thread_local const auto rgb = devmat::merge_channels({rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]});
    DEVMAT_BENCH_NPP(nppiRGBToGray_8u_C3C1R_Ctx(rgb.data(), 3 * kStepU8, out.data(), kStepU8, b::npp_size(kSide, kSide), ctx));
  });
#endif
}

/// Canny as bench_image_neigh times it (a 9x9 box of noise, thresholds 5 and 15), with more
/// hysteresis rounds between two waits for the flag: "ours-next-c8", "-c16" (ours: 4). Tells
/// whether the host round trips or the rounds themselves are canny's cost.
void register_canny() {
  const auto smooth = []() -> const DeviceMatrix<U8>& {
    static const DeviceMatrix<U8> m = devmat::box_filter(input<U8>(), 9, 9);
    return m;
  };
  const auto ours = [smooth] { return devmat::canny(smooth(), 5, 15); };
  benchmark::RegisterBenchmark(b::name("canny_5_15", "u8", kShape, "ours").c_str(), [=](benchmark::State& st) {
    DeviceMatrix<U8> out;
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] { out = ours(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  for (int rounds : {8, 16})
    register_variant<U8>("canny_5_15", "ours-next-c" + std::to_string(rounds), ours, [=](DeviceMatrix<U8>& out) {
      const auto& img = smooth();
      d::launch_canny(img.stream(), img.data(), kSide, out.data(), kSide, kSide, 5, 15, rounds);
    });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>("canny_5_15", [smooth](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    const NppiSize size = b::npp_size(kSide, kSide);
    thread_local const DeviceMatrix<U8> buffer = [&] {
      int bytes = 0;
      DEVMAT_BENCH_NPP(nppiFilterCannyBorderGetBufferSize(size, &bytes));
      return DeviceMatrix<U8>(1, std::max(1, bytes));
    }();
    DEVMAT_BENCH_NPP(nppiFilterCannyBorder_8u_C1R_Ctx(smooth().data(), kStepU8, size, NppiPoint{0, 0}, out.data(), kStepU8,
                                                      size, NPP_FILTER_SOBEL, NPP_MASK_SIZE_3_X_3, 5, 15, nppiNormL1,
                                                      NPP_BORDER_REPLICATE, const_cast<U8*>(buffer.data()), ctx));
  });
#endif
}

}  // namespace

int main(int argc, char** argv) {
  (void)input<U8>();  // every row runs on the calling thread's stream, the inputs' own
  for (int k : {3, 5}) register_box(k);
  register_morph(false, 3);
  register_morph(true, 3);
  register_morph(false, 5);
  register_filter2d();
  register_threshold();
  register_gray();
  register_canny();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
