// The small-kernel image operations against NVIDIA NPP at 4096x4096, in megapixels per second:
// u8 box 3x3/5x5, u8 erode/dilate 3x3 and dilate 5x5, f32 filter2d 3x3/5x5/7x7, u8 and f32 threshold,
// u8 rgb_to_gray, u8 canny. Each op has "ours" (the public function), "npp" (where CMake found
// NPP; the same calls as bench_image_neigh / bench_image_ops / bench_filter) and
// "ours-<config>" rows, the other kernels or configurations the library has for that case, so
// that one run shows which to dispatch: box "ours-word-r4/r8/r16" (4 pixels a thread, R output
// rows), "ours-band-r4/r8/r16" (16 pixels a thread), "ours-slide-r4/r8/r16" (4 pixels a
// thread, column sums slid down the R rows, 16-bit lanes by byte permutes) and
// "ours-slide2-r4/r8/r16" (the same, 8 pixels a thread), "ours-vec16-r4/r8/r16" and
// "ours-vec16m6-r8/r16" (the sliding arithmetic, 16 pixels a thread: uint4 loads and stores,
// neighbours by shuffles; m6: registers capped at 80), morphology
// "ours-r4/r8/r16" (u8 and f32) and "ours-two-pass" (f32: the van Herk passes), filter2d
// "ours-general" (the any-size kernel) and, 3x3 and 5x5, "ours-direct-r4/r8/r16" (no shared
// memory, R output rows a thread), canny "ours-walk2" and "ours-planes-ring-u<N>" (see
// register_canny), u8 threshold "ours-2d-c1/c2/c4" (the row-by-row kernel that
// views take, 16-byte chunks a thread) and "ours-flat-u1/u2/u4/u8" (the flat kernel that a dense
// image takes, uint4s a thread; ours 8, kStreamFlatVecs), f32 threshold "ours-geom" (the per-pixel kernel of
// views) and "ours-flat-u1/u2/u8", rgb_to_gray "ours-c2/c4" (its row-by-row kernel; ours 1) and
// "ours-flat-u2/u4", threshold "ours-keep" (see below) beside "memcpy" (a device-to-device copy
// of the image: the floor of a 1-read 1-write map).
// Timing: every row writes one output buffer over and over, as NPP's row does: "ours" drops its
// previous result before calling the function, so the pool's cache hands a block of the same
// size back: the same block (the output stays in L2 between iterations as NPP's does) only when
// the cache holds one of that size (it hands back the oldest; the counter "same_block" says
// which); "ours-keep" (threshold) keeps the
// previous result alive while the next is made, so two outputs alternate (what a loop that
// assigns `out = threshold(...)` does). Before timing, a variant's output is compared with the
// public function's once: u8 must be identical (else the row is skipped with an error), filter2d
// within 1e-5 of the output's range (the sums run in another order); the counter "differs" /
// "max_rel_diff" reports it.
#include "detail/runtime.hpp"
#include "dispatch/filter.cuh"
#include "dispatch/image_canny.cuh"
#include "dispatch/image_geometry.cuh"
#include "dispatch/image_morph.cuh"
#include "dispatch/image_neigh.cuh"
#include "kernels/image_color.cuh"
#include "kernels/image_intensity.cuh"
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

/// Row "<impl>" of one op: variant(out) writes the variant's result into `out` (kSide x kSide), compared
/// once with ours() (the public function) before timing; every iteration writes the same `out`.
template <class T>
void register_variant(const std::string& op, const std::string& impl, std::function<DeviceMatrix<T>()> ours,
                      std::function<void(DeviceMatrix<T>&)> variant) {
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, impl).c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    DeviceMatrix<T> check(kSide, kSide);
    variant(check);
    const double diff = differs(check, ours());
    const bool exact = !std::is_same_v<T, float>;
    st.counters[exact ? "differs" : "max_rel_diff"] = diff;
    if (exact ? diff != 0 : !(diff <= 1e-5)) {
      st.SkipWithError(("variant differs from ours: " + std::to_string(diff)).c_str());
      return;
    }
    DeviceMatrix<T> out(kSide, kSide);
    b::time_on_stream(st, s, kPixels, b::kMpixps, [&] { variant(out); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// Row "ours": the public function, its previous result dropped first (one output buffer, as
/// NPP's row, when the pool's cache hands the same block back).
template <class T>
void register_ours(const std::string& op, std::function<DeviceMatrix<T>()> ours, const std::string& impl = "ours") {
  benchmark::RegisterBenchmark(b::name(op, b::dtype<T>(), kShape, impl).c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    DeviceMatrix<T> out;
    const std::size_t allocs = d::pool_allocations();
    std::int64_t same = 0;
    const void* last = nullptr;
    b::time_on_stream(st, s, kPixels, b::kMpixps, [&] {
      out = DeviceMatrix<T>();
      out = ours();
      same += out.data() == last;
      last = out.data();
    });
    const auto iters = static_cast<double>(std::max<std::int64_t>(st.iterations(), 1));
    // Calls into the pool's allocator (the block cache missed), ~4 us of host time each: 0 expected.
    st.counters["pool_allocs_per_iter"] = static_cast<double>(d::pool_allocations() - allocs) / iters;
    // Calls whose output was the previous call's block (in L2 still, as NPP's one buffer): 1
    // whenever the cache holds a single block of the output's size; 0 when it holds several
    // (the earlier rows' outputs: the cache hands back the oldest).
    st.counters["same_block"] = static_cast<double>(same) / iters;
  })->UseManualTime()->Unit(benchmark::kMillisecond);
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

/// The sliding box kernel (box_u8_slide_kernel): "ours-slide-r4/r8/r16" (output rows a thread),
/// "ours-slide2-r4/r8/r16" (the same with 8 pixels a thread: two words, 4 loads a row), and
/// box_u8_vec16_kernel: "ours-vec16-r4/r8/r16", "ours-vec16m6-r8/r16".
void register_box_slide(int k, const std::string& op, const std::function<DeviceMatrix<U8>()>& ours) {
  for (int words : {1, 2})
    for (int rpt : {4, 8, 16})
      register_variant<U8>(op, std::string(words == 2 ? "ours-slide2-r" : "ours-slide-r") + std::to_string(rpt), ours,
                           [k, rpt, words](DeviceMatrix<U8>& out) {
                             const auto& in = input<U8>();
                             d::launch_box_u8_small(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k,
                                                    d::BoxU8Config{false, rpt, true, words});
                           });
  // box_u8_vec16_kernel: 16 pixels a thread, registers free (m1) or at most 80 (m6);
  // kBoxU8Vec16Rows / kBoxU8Vec16MinBlocks make one the default.
  for (const auto& [rpt, mb] : {std::pair{4, 1}, std::pair{8, 1}, std::pair{16, 1}, std::pair{8, 6}, std::pair{16, 6}})
    register_variant<U8>(op, std::string(mb == 6 ? "ours-vec16m6-r" : "ours-vec16-r") + std::to_string(rpt), ours,
                         [k, rpt = rpt, mb = mb](DeviceMatrix<U8>& out) {
                           const auto& in = input<U8>();
                           d::launch_box_u8_small(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k,
                                                  d::BoxU8Config{false, rpt, false, 1, true, mb});
                         });
}

void register_box(int k) {
  const std::string op = "box_" + std::to_string(k) + "x" + std::to_string(k);
  const auto ours = [k] { return devmat::box_filter(input<U8>(), k, k); };
  register_ours<U8>(op, ours);
  for (const bool band : {false, true})
    for (int rpt : {4, 8, 16})
      register_variant<U8>(op, std::string(band ? "ours-band-r" : "ours-word-r") + std::to_string(rpt), ours,
                           [k, band, rpt](DeviceMatrix<U8>& out) {
                             const auto& in = input<U8>();
                             d::launch_box_u8_small(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k,
                                                    d::BoxU8Config{band, rpt});
                           });
  register_box_slide(k, op, ours);
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
  register_ours<U8>(op, ours);
  for (int rpt : {4, 8, 16})
    register_variant<U8>(op, "ours-r" + std::to_string(rpt), ours, [=](DeviceMatrix<U8>& out) {
      const auto& in = input<U8>();
      if (erode) d::launch_morph_small<true>(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k, rpt);
      else d::launch_morph_small<false>(stream_of(in), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k, rpt);
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

/// The fused float erosion / dilation (sides 3 and 5; 7 and 9 where "ours" is still the one-kernel
/// tile) beside its rows-per-thread variants and the two-pass van Herk kernels it replaced; NPP's
/// rows are in bench_image_neigh.
void register_morph_f32(bool erode, int k) {
  const std::string op = std::string(erode ? "erode_" : "dilate_") + std::to_string(k) + "x" + std::to_string(k);
  const auto ours = [=] { return erode ? devmat::erode(input<float>(), k, k) : devmat::dilate(input<float>(), k, k); };
  register_ours<float>(op, ours);
  const auto run = [erode](auto f) {
    if (erode) f(std::true_type{});
    else f(std::false_type{});
  };
  for (int rpt : {4, 8, 16})
    register_variant<float>(op, "ours-r" + std::to_string(rpt), ours, [=](DeviceMatrix<float>& out) {
      const auto& in = input<float>();
      run([&](auto e) {
        d::launch_morph_small<decltype(e)::value>(in.stream().native(), in.data(), kSide, out.data(), kSide, kSide, kSide, k, k, rpt);
      });
    });
  const auto tmp = std::make_shared<DeviceMatrix<float>>(kSide, kSide);
  register_variant<float>(op, "ours-two-pass", ours, [=](DeviceMatrix<float>& out) {
    const auto& in = input<float>();
    run([&](auto e) {
      constexpr bool kErode = decltype(e)::value;
      d::launch_morph_pass<float, kErode, true>(in.stream().native(), in.data(), kSide, tmp->data(), kSide, kSide, kSide, k);
      d::launch_morph_pass<float, kErode, false>(in.stream().native(), tmp->data(), kSide, out.data(), kSide, kSide, kSide, k);
    });
  });
}

/// A k x k kernel of positive weights summing to 1 (bench_filter's box_like_kernel(k)).
std::vector<float> weights(int k) {
  std::mt19937 gen(7u + k);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  std::vector<float> w(k * k);
  float sum = 0;
  for (float& x : w) sum += x = dist(gen);
  for (float& x : w) x /= sum;
  return w;
}

void register_filter2d(int k) {
  const std::string op = "filter2d_" + std::to_string(k) + "x" + std::to_string(k);
  const auto kernel = std::make_shared<const DeviceMatrix<float>>(DeviceMatrix<float>::from_vector(weights(k), k, k));
  const auto ours = [=] { return devmat::filter2d(input<float>(), *kernel); };
  register_ours<float>(op, ours);
  register_variant<float>(op, "ours-general", ours, [=](DeviceMatrix<float>& out) {
    const auto& in = input<float>();
    d::dispatch_filter2d(std::make_integer_sequence<int, (d::kMaxFilterSide + 1) / 2>{}, k, in.stream().native(), in.data(),
                         kSide, out.data(), kSide, kSide, kernel->data(), k);
  });
  if (k <= 5)
    for (int rpt : {4, 8, 16})  // the kernel without shared memory
      register_variant<float>(op, "ours-direct-r" + std::to_string(rpt), ours, [=](DeviceMatrix<float>& out) {
        const auto& in = input<float>();
        d::launch_filter2d_small(in.stream().native(), in.data(), kSide, out.data(), kSide, kSide, kSide, kernel->data(), k,
                                 d::Filter2dSmallConfig{true, rpt});
      });
#if DEVMAT_BENCH_HAVE_NPP
  const auto reversed = std::make_shared<const DeviceMatrix<float>>([k] {
    const std::vector<float> w = weights(k);
    return DeviceMatrix<float>::from_vector(std::vector<float>(w.rbegin(), w.rend()), k, k);  // NPP convolves
  }());
  register_npp<float>(op, [=](DeviceMatrix<float>& out, const NppStreamContext& ctx) {
    DEVMAT_BENCH_NPP(nppiFilterBorder_32f_C1R_Ctx(input<float>().data(), kStepF32, b::npp_size(kSide, kSide), NppiPoint{0, 0},
                                                  out.data(), kStepF32, b::npp_size(kSide, kSide), reversed->data(),
                                                  NppiSize{k, k}, NppiPoint{k / 2, k / 2}, NPP_BORDER_REPLICATE, ctx));
  });
#endif
}

void register_threshold() {
  const auto ours = [] { return devmat::threshold(input<U8>(), 128, 255, devmat::Threshold::trunc); };
  register_ours<U8>("threshold_trunc", ours);
  const d::ThresholdWord trunc{128, 255u * 0x01010101u, d::kThTrunc, nullptr, 0u};
  for (int c : {1, 2, 4})  // the row-by-row kernel (views take it), 16-byte chunks a thread
    register_variant<U8>("threshold_trunc", "ours-2d-c" + std::to_string(c), ours, [c, trunc](DeviceMatrix<U8>& out) {
      d::StreamArgs<1> a{};
      a.in[0] = input<U8>().data();
      a.ld[0] = kSide;
      d::launch_stream_u8(stream_of(input<U8>()), a, out.data(), kSide, kSide, kSide, trunc, c);
    });
  for (int u : {1, 2, 4, 8})  // the flat kernel (ours: kStreamFlatVecs<U8>), uint4s a thread
    register_variant<U8>("threshold_trunc", "ours-flat-u" + std::to_string(u), ours, [u, trunc](DeviceMatrix<U8>& out) {
      d::StreamArgs<1> a{};
      a.in[0] = input<U8>().data();
      a.ld[0] = kSide;
      d::launch_stream_flat(stream_of(input<U8>()), a, out.data(), kSide * kSide, trunc, u);
    });
  benchmark::RegisterBenchmark(b::name("threshold_trunc", "u8", kShape, "ours-keep").c_str(), [=](benchmark::State& st) {
    DeviceMatrix<U8> out;
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] { out = ours(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("threshold_trunc", "u8", kShape, "memcpy").c_str(), [](benchmark::State& st) {
    DeviceMatrix<U8> out(kSide, kSide);
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] {
      DEVMAT_BENCH_CUDA(cudaMemcpyAsync(out.data(), input<U8>().data(), static_cast<std::size_t>(kSide * kSide),
                                        cudaMemcpyDeviceToDevice, stream_of(input<U8>())));
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>("threshold_trunc", [](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    DEVMAT_BENCH_NPP(nppiThreshold_8u_C1R_Ctx(input<U8>().data(), kStepU8, out.data(), kStepU8, b::npp_size(kSide, kSide), 128,
                                              NPP_CMP_GREATER, ctx));
  });
#endif
}

/// threshold's trunc type on f32 (the other types share the kernel): ours (the flat kernel),
/// "ours-geom" (the per-pixel kernel that views take), "ours-flat-u1/u2/u8" (uint4s a thread),
/// "memcpy" (a copy of the 64 MiB image) and NPP's nppiThreshold_32f.
void register_threshold_f32() {
  const auto ours = [] { return devmat::threshold(input<float>(), 0.5, 1.0, devmat::Threshold::trunc); };
  register_ours<float>("threshold_trunc", ours);
  register_variant<float>("threshold_trunc", "ours-geom", ours, [](DeviceMatrix<float>& out) {
    const auto& in = input<float>();
    d::launch_geom_map(stream_of(input<U8>()), out.data(), kSide, kSide,
                       d::ThresholdF32{in.data(), kSide, 0.5f, 1.f, d::kThTrunc});
  });
  for (int u : {1, 2, 8})
    register_variant<float>("threshold_trunc", "ours-flat-u" + std::to_string(u), ours, [u](DeviceMatrix<float>& out) {
      d::StreamArgs<1> a{};
      a.in[0] = reinterpret_cast<const U8*>(input<float>().data());
      a.ld[0] = kSide;
      d::launch_stream_flat(stream_of(input<U8>()), a, out.data(), kSide * kSide, d::ThresholdF32Word{0.5f, 1.f, d::kThTrunc}, u);
    });
  benchmark::RegisterBenchmark(b::name("threshold_trunc", "f32", kShape, "memcpy").c_str(), [](benchmark::State& st) {
    DeviceMatrix<float> out(kSide, kSide);
    b::time_on_stream(st, stream_of(input<U8>()), kPixels, b::kMpixps, [&] {
      DEVMAT_BENCH_CUDA(cudaMemcpyAsync(out.data(), input<float>().data(), static_cast<std::size_t>(kSide * kSide) * 4,
                                        cudaMemcpyDeviceToDevice, stream_of(input<U8>())));
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<float>("threshold_trunc", [](DeviceMatrix<float>& out, const NppStreamContext& ctx) {
    DEVMAT_BENCH_NPP(nppiThreshold_32f_C1R_Ctx(input<float>().data(), kStepF32, out.data(), kStepF32,
                                               b::npp_size(kSide, kSide), 0.5f, NPP_CMP_GREATER, ctx));
  });
#endif
}

void register_gray() {
  const auto ours = [] { return devmat::rgb_to_gray(rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]); };
  register_ours<U8>("rgb_to_gray", ours);
  for (int c : {2, 4})
    register_variant<U8>("rgb_to_gray", "ours-c" + std::to_string(c), ours, [c](DeviceMatrix<U8>& out) {
      const auto& p = rgb_planes();
      d::StreamArgs<3> a{};
      for (int k = 0; k < 3; ++k) {
        a.in[k] = p[k].data();
        a.ld[k] = kSide;
      }
      d::launch_stream_u8(stream_of(p[0]), a, out.data(), kSide, kSide, kSide, d::GrayWord{}, c);
    });
#if DEVMAT_BENCH_HAVE_NPP
  register_npp<U8>("rgb_to_gray", [](DeviceMatrix<U8>& out, const NppStreamContext& ctx) {
    thread_local const auto rgb = devmat::merge_channels({rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]});
    DEVMAT_BENCH_NPP(nppiRGBToGray_8u_C3C1R_Ctx(rgb.data(), 3 * kStepU8, out.data(), kStepU8, b::npp_size(kSide, kSide), ctx));
  });
#endif
}

/// rgb_to_gray through the flat kernel (threshold's default), uint4s a thread: "ours-flat-u2/u4".
void register_gray_flat() {
  const auto ours = [] { return devmat::rgb_to_gray(rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]); };
  for (int u : {2, 4})
    register_variant<U8>("rgb_to_gray", "ours-flat-u" + std::to_string(u), ours, [u](DeviceMatrix<U8>& out) {
      const auto& p = rgb_planes();
      d::StreamArgs<3> a{};
      for (int k = 0; k < 3; ++k) {
        a.in[k] = p[k].data();
        a.ld[k] = kSide;
      }
      d::launch_stream_flat(stream_of(p[0]), a, out.data(), kSide * kSide, d::GrayWord{}, u);
    });
}

/// Canny as bench_image_neigh times it (a 9x9 box of noise, thresholds 5 and 15), and
/// "canny_snake_20_100": a serpentine of weak edges through every tile row with one strong end
/// (test/support/canny_ref.hpp's snake_image: a path of 110 on 100, rows 5 apart), the worst case
/// for tile-local fills. "ours" is the default (suppression into bit planes by warps walking down
/// one tile, 4 rounds on the planes, then the ring pieces' components behind the last round's
/// flag, no host wait); first ours and NPP's rows of both images, then the forced
/// configurations: "ours-walk2" (warps walking down 2 tiles, the default up to run V1),
/// "ours-planes-ring-m4" (4 rounds, the host reads the flag, then the components where it is
/// set: the default up to run T6), "ours-planes-ring-u0/u1/u2/u3/u4" (the components after
/// exactly 0 .. 4 rounds behind the last one's flag: CannyConfig::ring_unchecked).
void register_canny() {
  const auto smooth = []() -> const DeviceMatrix<U8>& {
    static const DeviceMatrix<U8> m = devmat::box_filter(input<U8>(), 9, 9);
    return m;
  };
  const auto snake = []() -> const DeviceMatrix<U8>& {
    static const DeviceMatrix<U8> m = [] {
      std::vector<U8> h(static_cast<std::size_t>(kSide * kSide), 100);
      for (Index y = 1, k = 0; y < kSide - 1; y += 5, ++k) {
        for (Index x = 1; x < kSide - 1; ++x) h[y * kSide + x] = 110;
        const Index turn = k % 2 ? 1 : kSide - 2;
        for (Index i = y; i < std::min(kSide - 1, y + 5); ++i) h[i * kSide + turn] = 110;
      }
      for (Index y = 0; y < 3; ++y)
        for (Index x = 0; x < 3; ++x) h[y * kSide + x] = 220;
      return DeviceMatrix<U8>::from_vector(h, kSide, kSide, input<U8>().stream());
    }();
    return m;
  };
  const auto ours = [smooth] { return devmat::canny(smooth(), 5, 15); };
  const auto ours_snake = [snake] { return devmat::canny(snake(), 20, 100); };
  register_ours<U8>("canny_5_15", ours);
  register_ours<U8>("canny_snake_20_100", ours_snake);
#if DEVMAT_BENCH_HAVE_NPP
  const auto npp_canny = [](const DeviceMatrix<U8>& img, DeviceMatrix<U8>& out, const NppStreamContext& ctx, Npp16s low,
                            Npp16s high) {
    const NppiSize size = b::npp_size(kSide, kSide);
    thread_local const DeviceMatrix<U8> buffer = [&] {
      int bytes = 0;
      DEVMAT_BENCH_NPP(nppiFilterCannyBorderGetBufferSize(size, &bytes));
      return DeviceMatrix<U8>(1, std::max(1, bytes));
    }();
    DEVMAT_BENCH_NPP(nppiFilterCannyBorder_8u_C1R_Ctx(img.data(), kStepU8, size, NppiPoint{0, 0}, out.data(), kStepU8, size,
                                                      NPP_FILTER_SOBEL, NPP_MASK_SIZE_3_X_3, low, high, nppiNormL1,
                                                      NPP_BORDER_REPLICATE, const_cast<U8*>(buffer.data()), ctx));
  };
  register_npp<U8>("canny_5_15", [=](DeviceMatrix<U8>& out, const NppStreamContext& ctx) { npp_canny(smooth(), out, ctx, 5, 15); });
  register_npp<U8>("canny_snake_20_100",
                   [=](DeviceMatrix<U8>& out, const NppStreamContext& ctx) { npp_canny(snake(), out, ctx, 20, 100); });
#endif
  for (const char* suffix : {"-walk2", "-planes-ring-m4", "-planes-ring-u0", "-planes-ring-u1", "-planes-ring-u2",
                             "-planes-ring-u3", "-planes-ring-u4"}) {
    d::CannyConfig config;
    const std::string v = suffix;
    if (v == "-walk2") config.walk_tiles = 2;
    if (v == "-planes-ring-m4") {  // 4 rounds, the host reads the flag, the components if needed
      config.max_rounds = 4;
      config.ring_unchecked = false;
    }
    if (v.rfind("-planes-ring-u", 0) == 0) {
      config.max_rounds = std::stoi(v.substr(14));
      config.ring_unchecked = true;
      config.rounds_per_check = std::clamp(config.max_rounds, 1, 4);
    }
    const std::string impl = "ours" + v;
    register_variant<U8>("canny_5_15", impl, ours, [=](DeviceMatrix<U8>& out) {
      const auto& img = smooth();
      d::launch_canny(img.stream(), img.data(), kSide, out.data(), kSide, kSide, 5, 15, config);
    });
    register_variant<U8>("canny_snake_20_100", impl, ours_snake, [=](DeviceMatrix<U8>& out) {
      const auto& img = snake();
      d::launch_canny(img.stream(), img.data(), kSide, out.data(), kSide, kSide, 20, 100, config);
    });
  }
}

}  // namespace

int main(int argc, char** argv) {
  (void)input<U8>();  // every row runs on the calling thread's stream, the inputs' own
  for (int k : {3, 5}) register_box(k);
  register_morph(false, 3);
  register_morph(true, 3);
  register_morph(false, 5);
  register_morph_f32(true, 3);
  register_morph_f32(false, 5);
  register_morph_f32(true, 7);  // "ours" the tile; "ours-r<R>" the fused kernel, not yet the default
  register_morph_f32(true, 9);
  for (int k : {3, 5, 7}) register_filter2d(k);
  register_threshold();
  register_threshold_f32();
  register_gray();
  register_gray_flat();
  register_canny();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
