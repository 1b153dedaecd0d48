// Image operations on a 4096x4096 image, in megapixels (of output) per second: ours beside
// NVIDIA NPP's same operation in the same run (rows "npp"; bench/npp_support.hpp), where this
// build found NPP. Geometry: resize (u8 linear to 2048^2 and 6000^2, nearest, area; f32
// linear), warp_affine (u8 linear, a rotation), flip (left-right), rotate90 (NPP has no quarter
// turn: its transpose, the same data movement, is the reference "npp-transpose"). Colour (u8):
// split_channels of an interleaved RGB image (NPP: nppiCopy C3P3R), rgb_to_gray and
// rgb_to_hsv from planes (NPP reads the interleaved image: the same bytes). Intensity (u8): the
// 256-bin histogram (nppiHistogramEven, in input pixels per second) and threshold's trunc type
// (nppiThreshold with NPP_CMP_GREATER, the same operation).
// Resizes to exactly half size have a row "ours-general": the per-pixel kernel they ran before
// the halving kernel (register_resize_general); f32 linear to half size a row "ours-cs" (the
// halving kernel reading the source cache-streaming), u8 area to 1365^2 a row "ours-tab" (the
// footprints from shared memory).
// Before timing, ours is compared once with NPP and the largest difference is reported as the
// counter "max_diff_vs_npp" (the interpolating operations round differently from NPP; the tests
// hold ours to OpenCV's results).
#include "detail/runtime.hpp"
#include "dispatch/image_geometry.cuh"
#include "npp_support.hpp"
#include "random.cuh"
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;

constexpr Index kSide = 4096;

std::string shape_of(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

template <class T>
const DeviceMatrix<T>& input() {
  static const DeviceMatrix<T> img = b::random_matrix<T>(kSide, kSide, 99);
  return img;
}

template <class T>
double max_diff(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  const std::vector<T> x = a.to_vector(), y = b.to_vector();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
  return m;
}

/// Registers op/dtype/shape/ours (ours() returns the result) and, with NPP, .../<npp_name>
/// (npp(out, stream) writes into `out`, out_rows x out_cols).
template <class T>
void register_op(const std::string& op, const std::string& shape, Index out_rows, Index out_cols,
                 std::function<DeviceMatrix<T>()> ours,
                 [[maybe_unused]] std::function<void(DeviceMatrix<T>&, cudaStream_t)> npp,
                 [[maybe_unused]] const std::string& npp_name = "npp", [[maybe_unused]] bool compare = true,
                 double work_pixels = 0, const char* dtype_name = nullptr) {
  const std::string dt = dtype_name ? dtype_name : b::dtype<T>();
  // Throughput in output pixels, or in `work_pixels` (the histogram's input).
  const double pixels = work_pixels > 0 ? work_pixels : static_cast<double>(out_rows) * static_cast<double>(out_cols);
  benchmark::RegisterBenchmark(b::name(op, dt, shape, "ours").c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<std::uint8_t>().stream().native();
#if DEVMAT_BENCH_HAVE_NPP
    if (npp && compare) {
      DeviceMatrix<T> ref(out_rows, out_cols);
      npp(ref, s);
      st.counters["max_diff_vs_npp"] = max_diff(ours(), ref);
    }
#endif
    DeviceMatrix<T> out;
    const std::size_t allocs = devmat::detail::pool_allocations();
    b::time_on_stream(st, s, pixels, b::kMpixps, [&] { out = ours(); });
    // Calls into the pool's allocator (the block cache missed), ~4 us of host time each: 0 expected.
    st.counters["pool_allocs_per_iter"] = static_cast<double>(devmat::detail::pool_allocations() - allocs) /
                                          static_cast<double>(std::max<std::int64_t>(st.iterations(), 1));
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_NPP
  if (!npp) return;
  benchmark::RegisterBenchmark(b::name(op, dt, shape, npp_name).c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<std::uint8_t>().stream().native();
    DeviceMatrix<T> out(out_rows, out_cols);
    b::time_on_stream(st, s, pixels, b::kMpixps, [&] { npp(out, s); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}

#if DEVMAT_BENCH_HAVE_NPP
int step(Index cols, std::size_t elem) { return static_cast<int>(cols * static_cast<Index>(elem)); }

/// NPP's resize of the whole input into the whole output.
template <class T>
std::function<void(DeviceMatrix<T>&, cudaStream_t)> npp_resize(int interp) {
  return [interp](DeviceMatrix<T>& out, cudaStream_t s) {
    const auto& in = input<T>();
    const NppiSize ss = b::npp_size(in.rows(), in.cols()), ds = b::npp_size(out.rows(), out.cols());
    const NppiRect sr{0, 0, ss.width, ss.height}, dr{0, 0, ds.width, ds.height};
    if constexpr (std::is_same_v<T, std::uint8_t>)
      DEVMAT_BENCH_NPP(nppiResize_8u_C1R_Ctx(in.data(), step(in.cols(), 1), ss, sr, out.data(), step(out.cols(), 1), ds,
                                             dr, interp, b::cached_npp_context(s)));
    else
      DEVMAT_BENCH_NPP(nppiResize_32f_C1R_Ctx(in.data(), step(in.cols(), 4), ss, sr, out.data(), step(out.cols(), 4), ds,
                                              dr, interp, b::cached_npp_context(s)));
  };
}
#define DEVMAT_NPP(...) __VA_ARGS__
#else
#define DEVMAT_NPP(...) nullptr
#endif

template <class T>
void register_resize(Index rows, Index cols, devmat::Interp interp, [[maybe_unused]] int npp_interp) {
  const std::string name = interp == devmat::Interp::nearest ? "nearest" : interp == devmat::Interp::linear ? "linear" : "area";
  register_op<T>("resize_" + name, shape_of(kSide, kSide) + "->" + shape_of(rows, cols), rows, cols,
                 [=] { return devmat::resize(input<T>(), rows, cols, interp); },
                 DEVMAT_NPP(npp_resize<T>(npp_interp)));
}

/// Row "ours-general" of a resize to exactly half size: the per-pixel kernel (ResizeArea or
/// ResizeLinear) that resize ran there before the halving kernel took over, into one output
/// buffer. Before timing it is compared with ours once: counter "max_diff_vs_ours" (0 for linear
/// and f32; u8 area differs by one grey level where the block sum is 2 mod 4: the general kernel
/// rounds the mean half to even, OpenCV's fast path and ours half up).
template <class T>
void register_resize_general(Index rows, Index cols, devmat::Interp interp) {
  namespace d = devmat::detail;
  const std::string name = interp == devmat::Interp::linear ? "linear" : "area";
  const std::string shape = shape_of(kSide, kSide) + "->" + shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("resize_" + name, b::dtype<T>(), shape, "ours-general").c_str(),
                               [=](benchmark::State& st) {
    const cudaStream_t s = input<std::uint8_t>().stream().native();
    const auto& in = input<T>();
    const double inv_x = static_cast<double>(cols) / kSide, inv_y = static_cast<double>(rows) / kSide;
    const auto general = [&](DeviceMatrix<T>& out) {
      if (interp == devmat::Interp::area)
        d::launch_geom_map(s, out.data(), rows, cols, d::ResizeArea<T>{in.data(), kSide, kSide, kSide, 1.0 / inv_x, 1.0 / inv_y});
      else
        d::launch_geom_map(s, out.data(), rows, cols,
                           d::ResizeLinear<T, false>{in.data(), kSide, kSide, kSide, 1.0 / inv_x, inv_x, 1.0 / inv_y, inv_y});
    };
    DeviceMatrix<T> out(rows, cols);
    general(out);
    st.counters["max_diff_vs_ours"] = max_diff(out, devmat::resize(in, rows, cols, interp));
    b::time_on_stream(st, s, static_cast<double>(rows) * cols, b::kMpixps, [&] { general(out); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// Row "ours-tab" of an INTER_AREA shrink that is not to half size: resize_area_tab_kernel (the
/// footprints once a block, in shared memory) into one output buffer, the kernel that
/// kResizeAreaTable makes resize take. Before timing it is compared with ours once: counter
/// "max_diff_vs_ours" (must be 0: the same arithmetic).
void register_resize_area_tab(Index rows, Index cols) {
  namespace d = devmat::detail;
  using U8 = std::uint8_t;
  const std::string shape = shape_of(kSide, kSide) + "->" + shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("resize_area", b::dtype<U8>(), shape, "ours-tab").c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<U8>().stream().native();
    const auto& in = input<U8>();
    // resize's scales: inv = dst / src, scale = 1 / inv, in double.
    const d::ResizeArea<U8> f{in.data(), kSide, kSide, kSide, 1.0 / (static_cast<double>(cols) / kSide),
                              1.0 / (static_cast<double>(rows) / kSide)};
    DeviceMatrix<U8> out(rows, cols);
    d::launch_resize_area(s, out.data(), rows, cols, f, true);
    st.counters["max_diff_vs_ours"] = max_diff(out, devmat::resize(in, rows, cols, devmat::Interp::area));
    b::time_on_stream(st, s, static_cast<double>(rows) * cols, b::kMpixps, [&] { d::launch_resize_area(s, out.data(), rows, cols, f, true); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// Row "ours-cs" of a resize to exactly half size: the halving kernel reading its source
/// cache-streaming (kResizeHalfStreamF32 makes f32 take it), into one output buffer; compared
/// with ours once before timing (counter "max_diff_vs_ours", must be 0).
template <class T>
void register_resize_half_cs(Index rows, Index cols, devmat::Interp interp) {
  namespace d = devmat::detail;
  const std::string name = interp == devmat::Interp::linear ? "linear" : "area";
  const std::string shape = shape_of(kSide, kSide) + "->" + shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("resize_" + name, b::dtype<T>(), shape, "ours-cs").c_str(), [=](benchmark::State& st) {
    const cudaStream_t s = input<std::uint8_t>().stream().native();
    const auto& in = input<T>();
    DeviceMatrix<T> out(rows, cols);
    d::launch_resize_half(s, in.data(), kSide, out.data(), rows, cols, true);
    st.counters["max_diff_vs_ours"] = max_diff(out, devmat::resize(in, rows, cols, interp));
    b::time_on_stream(st, s, static_cast<double>(rows) * cols, b::kMpixps,
                      [&] { d::launch_resize_half(s, in.data(), kSide, out.data(), rows, cols, true); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// A rotation by 30 degrees about the centre, scale 0.9: a warp that reads every row.
const devmat::Affine kWarp = [] {
  const double a = 30.0 * M_PI / 180.0, s = 0.9, c = kSide / 2.0;
  const double al = s * std::cos(a), be = s * std::sin(a);
  return devmat::Affine{al, be, (1 - al) * c - be * c, -be, al, be * c + (1 - al) * c};
}();

template <class T>
void register_warp() {
  register_op<T>("warp_affine_linear", shape_of(kSide, kSide), kSide, kSide,
                 [] { return devmat::warp_affine(input<T>(), kWarp, kSide, kSide, devmat::Interp::linear); },
                 DEVMAT_NPP([](DeviceMatrix<T>& out, cudaStream_t s) {
                   const auto& in = input<T>();
                   const NppiSize ss = b::npp_size(kSide, kSide);
                   const NppiRect r{0, 0, ss.width, ss.height};
                   const double m[2][3] = {{kWarp[0], kWarp[1], kWarp[2]}, {kWarp[3], kWarp[4], kWarp[5]}};
                   // NPP leaves pixels that map outside untouched: clear them as ours does.
                   DEVMAT_BENCH_CUDA(cudaMemsetAsync(out.data(), 0, out.size() * sizeof(T), s));
                   if constexpr (std::is_same_v<T, std::uint8_t>)
                     DEVMAT_BENCH_NPP(nppiWarpAffine_8u_C1R_Ctx(in.data(), ss, step(kSide, 1), r, out.data(),
                                                                step(kSide, 1), r, m, NPPI_INTER_LINEAR, b::cached_npp_context(s)));
                   else
                     DEVMAT_BENCH_NPP(nppiWarpAffine_32f_C1R_Ctx(in.data(), ss, step(kSide, 4), r, out.data(),
                                                                 step(kSide, 4), r, m, NPPI_INTER_LINEAR, b::cached_npp_context(s)));
                 }));
}

template <class T>
void register_flip_rotate() {
  register_op<T>("flip_horizontal", shape_of(kSide, kSide), kSide, kSide,
                 [] { return devmat::flip(input<T>(), devmat::FlipAxis::horizontal); },
                 DEVMAT_NPP([](DeviceMatrix<T>& out, cudaStream_t s) {
                   const auto& in = input<T>();
                   if constexpr (std::is_same_v<T, std::uint8_t>)
                     DEVMAT_BENCH_NPP(nppiMirror_8u_C1R_Ctx(in.data(), step(kSide, 1), out.data(), step(kSide, 1),
                                                            b::npp_size(kSide, kSide), NPP_VERTICAL_AXIS, b::cached_npp_context(s)));
                   else
                     DEVMAT_BENCH_NPP(nppiMirror_32f_C1R_Ctx(in.data(), step(kSide, 4), out.data(), step(kSide, 4),
                                                             b::npp_size(kSide, kSide), NPP_VERTICAL_AXIS, b::cached_npp_context(s)));
                 }));
  register_op<T>("rotate90", shape_of(kSide, kSide), kSide, kSide, [] { return devmat::rotate90(input<T>(), 1); },
                 DEVMAT_NPP([](DeviceMatrix<T>& out, cudaStream_t s) {
                   const auto& in = input<T>();
                   if constexpr (std::is_same_v<T, std::uint8_t>)
                     DEVMAT_BENCH_NPP(nppiTranspose_8u_C1R_Ctx(in.data(), step(kSide, 1), out.data(), step(kSide, 1),
                                                               b::npp_size(kSide, kSide), b::cached_npp_context(s)));
                   else
                     DEVMAT_BENCH_NPP(nppiTranspose_32f_C1R_Ctx(in.data(), step(kSide, 4), out.data(), step(kSide, 4),
                                                                b::npp_size(kSide, kSide), b::cached_npp_context(s)));
                 }),
                 "npp-transpose");
}

/// Planes of an RGB image and the same image interleaved (rows x 3 cols).
const std::array<DeviceMatrix<std::uint8_t>, 3>& rgb_planes() {
  static const std::array<DeviceMatrix<std::uint8_t>, 3> p = {b::random_matrix<std::uint8_t>(kSide, kSide, 1),
                                                              b::random_matrix<std::uint8_t>(kSide, kSide, 2),
                                                              b::random_matrix<std::uint8_t>(kSide, kSide, 3)};
  return p;
}
const DeviceMatrix<std::uint8_t>& rgb_interleaved() {
  static const DeviceMatrix<std::uint8_t> m = devmat::merge_channels({rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]});
  return m;
}

/// Colour rows: ours() / npp() return or fill the first output plane only for the check.
void register_color() {
  using U8 = std::uint8_t;
  const std::string shape = shape_of(kSide, kSide);
  (void)input<U8>();  // the stream all rows run on is the input's (the calling thread's)
  register_op<U8>("split_channels_3", shape, kSide, kSide,
                  [] { return std::move(devmat::split_channels(rgb_interleaved(), 3)[1]); },
                  DEVMAT_NPP([](DeviceMatrix<U8>& out, cudaStream_t s) {
                    thread_local DeviceMatrix<U8> p0(kSide, kSide), p2(kSide, kSide);
                    U8* const dst[3] = {p0.data(), out.data(), p2.data()};
                    DEVMAT_BENCH_NPP(nppiCopy_8u_C3P3R_Ctx(rgb_interleaved().data(), step(3 * kSide, 1), dst,
                                                           step(kSide, 1), b::npp_size(kSide, kSide),
                                                           b::cached_npp_context(s)));
                  }));
  register_op<U8>("rgb_to_gray", shape, kSide, kSide,
                  [] { return devmat::rgb_to_gray(rgb_planes()[0], rgb_planes()[1], rgb_planes()[2]); },
                  DEVMAT_NPP([](DeviceMatrix<U8>& out, cudaStream_t s) {
                    DEVMAT_BENCH_NPP(nppiRGBToGray_8u_C3C1R_Ctx(rgb_interleaved().data(), step(3 * kSide, 1), out.data(),
                                                                step(kSide, 1), b::npp_size(kSide, kSide),
                                                                b::cached_npp_context(s)));
                  }));
  register_op<U8>("rgb_to_hsv", shape, kSide, kSide,
                  [] { return std::move(devmat::rgb_to_hsv(rgb_planes()[0], rgb_planes()[1], rgb_planes()[2])[0]); },
                  DEVMAT_NPP([](DeviceMatrix<U8>& out, cudaStream_t s) {
                    // NPP writes interleaved HSV with H in 0..255 (ours: planes, OpenCV's 0..179):
                    // not comparable, so this row has no check (compare = false below).
                    thread_local DeviceMatrix<U8> hsv(kSide, 3 * kSide);
                    DEVMAT_BENCH_NPP(nppiRGBToHSV_8u_C3R_Ctx(rgb_interleaved().data(), step(3 * kSide, 1), hsv.data(),
                                                             step(3 * kSide, 1), b::npp_size(kSide, kSide),
                                                             b::cached_npp_context(s)));
                    (void)out;
                  }),
                  "npp", false);
}

void register_intensity() {
  using U8 = std::uint8_t;
  const std::string shape = shape_of(kSide, kSide);
  register_op<std::int32_t>("histogram_256", shape, 1, 256, [] { return devmat::histogram(input<U8>()); },
                            DEVMAT_NPP([](DeviceMatrix<std::int32_t>& out, cudaStream_t s) {
                              const NppiSize sz = b::npp_size(kSide, kSide);
                              thread_local DeviceMatrix<U8> buffer = [&] {
                                std::size_t bytes = 0;
                                DEVMAT_BENCH_NPP(nppiHistogramEvenGetBufferSize_8u_C1R_Ctx(sz, 257, &bytes,
                                                                                           b::cached_npp_context(s)));
                                return DeviceMatrix<U8>(1, static_cast<Index>(std::max<std::size_t>(bytes, 1)));
                              }();
                              DEVMAT_BENCH_NPP(nppiHistogramEven_8u_C1R_Ctx(input<U8>().data(), step(kSide, 1), sz,
                                                                            out.data(), 257, 0, 256, buffer.data(),
                                                                            b::cached_npp_context(s)));
                            }),
                            "npp", true, static_cast<double>(kSide) * kSide, "u8");
  register_op<U8>("threshold_trunc", shape, kSide, kSide,
                  [] { return devmat::threshold(input<U8>(), 128, 255, devmat::Threshold::trunc); },
                  DEVMAT_NPP([](DeviceMatrix<U8>& out, cudaStream_t s) {
                    DEVMAT_BENCH_NPP(nppiThreshold_8u_C1R_Ctx(input<U8>().data(), step(kSide, 1), out.data(),
                                                              step(kSide, 1), b::npp_size(kSide, kSide), 128,
                                                              NPP_CMP_GREATER, b::cached_npp_context(s)));
                  }));
}

}  // namespace

int main(int argc, char** argv) {
#if !DEVMAT_BENCH_HAVE_NPP
  constexpr int NPPI_INTER_NN = 1, NPPI_INTER_LINEAR = 2, NPPI_INTER_SUPER = 8;
#endif
  using devmat::Interp;
  register_resize<std::uint8_t>(2048, 2048, Interp::linear, NPPI_INTER_LINEAR);
  register_resize<std::uint8_t>(6000, 6000, Interp::linear, NPPI_INTER_LINEAR);
  register_resize<std::uint8_t>(2048, 2048, Interp::nearest, NPPI_INTER_NN);
  register_resize<std::uint8_t>(6000, 6000, Interp::nearest, NPPI_INTER_NN);
  register_resize<std::uint8_t>(2048, 2048, Interp::area, NPPI_INTER_SUPER);
  register_resize<std::uint8_t>(1365, 1365, Interp::area, NPPI_INTER_SUPER);
  register_resize<float>(2048, 2048, Interp::linear, NPPI_INTER_LINEAR);
  register_resize<float>(6000, 6000, Interp::linear, NPPI_INTER_LINEAR);
  register_resize_general<std::uint8_t>(2048, 2048, Interp::linear);
  register_resize_general<std::uint8_t>(2048, 2048, Interp::area);
  register_resize_general<float>(2048, 2048, Interp::linear);
  register_resize_area_tab(1365, 1365);
  register_resize_half_cs<float>(2048, 2048, Interp::linear);
  register_warp<std::uint8_t>();
  register_warp<float>();
  register_flip_rotate<std::uint8_t>();
  register_flip_rotate<float>();
  register_color();
  register_intensity();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
