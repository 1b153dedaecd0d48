// Image filters on a 4096x4096 float image, in megapixels per second: filter2d with a 5x5 and a
// 15x15 kernel, gaussian_blur (sigma 2: 13 taps) and sobel, ours beside NVIDIA NPP (where CMake
// found it: the same filter with replicated borders; its counter "max_diff" is the largest
// |NPP - ours| once) and the same filter on the CPU with Eigen (one thread, float, replicated
// borders) in the same run. The CPU is timed with a host clock. sobel's "npp" row is NPP's
// horizontal and vertical Sobel filters alone (the issue's "Sobel x and y"), where ours also
// makes the magnitude sqrt(gx^2 + gy^2) in the same pass; "npp-magnitude" adds NPP's
// Sqr, AddSquare and Sqrt, the same result as ours (its max_diff is against ours).
#include "support.hpp"

#include <devmat/devmat.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#if DEVMAT_BENCH_HAVE_EIGEN
#include "cpu_stages.hpp"
#endif
#if DEVMAT_BENCH_HAVE_NPP
#include "npp_support.hpp"
#endif

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace b = devmat::bench;

constexpr Index kSide = 4096;
constexpr float kSigma = 2.f;

/// Uniform [0, 1) values, the same on every call.
std::vector<float> random_values(Index n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(0.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(gen);
  return v;
}

/// A k x k kernel of positive weights summing to 1.
std::vector<float> box_like_kernel(int k) {
  std::vector<float> w = random_values(k * k, 7u + k);
  float sum = 0;
  for (float x : w) sum += x;
  for (float& x : w) x /= sum;
  return w;
}

const std::vector<float>& image() {
  static const std::vector<float> img = random_values(kSide * kSide, 1234);
  return img;
}

#if DEVMAT_BENCH_HAVE_EIGEN
// ------------------------------------------------------------------ the CPU side (Eigen)
using HostF = cpu_stages::HostF;

template <class Op>
void time_on_host(benchmark::State& state, double work_per_iter, Op&& op) {
  double total_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    const auto t1 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(s);
    total_s += s;
  }
  state.counters["value"] = work_per_iter * static_cast<double>(state.iterations()) / total_s / 1e6;
  state.counters["unit"] = b::kMpixps;
}

/// Largest |ours - eigen| relative to the output's range, on a small odd-sized image.
template <class Gpu, class Cpu>
double check_small(Gpu&& gpu, Cpu&& cpu) {
  const Index r = 257, c = 263;
  const HostF h = Eigen::Map<const HostF>(image().data(), r, c);
  const HostF want = cpu(h);
  HostF got(r, c);
  gpu(DeviceMatrix<float>::from_host(h.data(), r, c)).copy_to_host(got.data());
  const double range = std::max(1e-30f, want.maxCoeff() - want.minCoeff());
  return (got - want).cwiseAbs().maxCoeff() / range;
}
#endif

const std::string kShape = std::to_string(kSide) + "x" + std::to_string(kSide);

void register_filter2d(int k) {
  const std::string op = "filter2d_" + std::to_string(k) + "x" + std::to_string(k);
  const double pixels = static_cast<double>(kSide * kSide);
  benchmark::RegisterBenchmark(b::name(op, "f32", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
    const auto kernel = DeviceMatrix<float>::from_vector(box_like_kernel(k), k, k);
#if DEVMAT_BENCH_HAVE_EIGEN
    const HostF hk = Eigen::Map<const HostF>(box_like_kernel(k).data(), k, k);
    const double err = check_small([&](const DeviceMatrix<float>& m) { return devmat::filter2d(m, kernel); },
                                   [&](const HostF& m) { return cpu_stages::filter2d(m, hk); });
    if (!(err <= 1e-5 * k)) {
      st.SkipWithError(("result differs from Eigen by " + std::to_string(err) + " of the range").c_str());
      return;
    }
#endif
    DeviceMatrix<float> out;
    b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, [&] { out = devmat::filter2d(img, kernel); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_EIGEN
  benchmark::RegisterBenchmark(b::name(op, "f32", kShape, "eigen-cpu").c_str(), [=](benchmark::State& st) {
    const HostF img = Eigen::Map<const HostF>(image().data(), kSide, kSide);
    const HostF hk = Eigen::Map<const HostF>(box_like_kernel(k).data(), k, k);
    HostF out;
    time_on_host(st, pixels, [&] {
      out = cpu_stages::filter2d(img, hk);
      benchmark::DoNotOptimize(out.data());
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}

void register_gaussian() {
  const double pixels = static_cast<double>(kSide * kSide);
  benchmark::RegisterBenchmark(b::name("gaussian_blur", "f32", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
#if DEVMAT_BENCH_HAVE_EIGEN
    const double err = check_small([](const DeviceMatrix<float>& m) { return devmat::gaussian_blur(m, kSigma); },
                                   [](const HostF& m) { return cpu_stages::gaussian_blur(m, kSigma); });
    if (!(err <= 1e-5 * 13)) {
      st.SkipWithError(("result differs from Eigen by " + std::to_string(err) + " of the range").c_str());
      return;
    }
#endif
    DeviceMatrix<float> out;
    b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, [&] { out = devmat::gaussian_blur(img, kSigma); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#if DEVMAT_BENCH_HAVE_EIGEN
  benchmark::RegisterBenchmark(b::name("gaussian_blur", "f32", kShape, "eigen-cpu").c_str(), [=](benchmark::State& st) {
    const HostF img = Eigen::Map<const HostF>(image().data(), kSide, kSide);
    HostF out;
    time_on_host(st, pixels, [&] {
      out = cpu_stages::gaussian_blur(img, kSigma);
      benchmark::DoNotOptimize(out.data());
    });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
#endif
}

void register_sobel() {
  const double pixels = static_cast<double>(kSide * kSide);
  benchmark::RegisterBenchmark(b::name("sobel", "f32", kShape, "ours").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
#if DEVMAT_BENCH_HAVE_EIGEN
    const double err = check_small([](const DeviceMatrix<float>& m) { return devmat::sobel(m); },
                                   [](const HostF& m) { return cpu_stages::sobel(m); });
    if (!(err <= 1e-5 * 9)) {
      st.SkipWithError(("result differs from Eigen by " + std::to_string(err) + " of the range").c_str());
      return;
    }
#endif
    DeviceMatrix<float> out;
    b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, [&] { out = devmat::sobel(img); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

#if DEVMAT_BENCH_HAVE_NPP
// ------------------------------------------------------------------ NVIDIA NPP
/// Largest |a - b|, elementwise.
double max_diff(const DeviceMatrix<float>& a, const DeviceMatrix<float>& b) {
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  double d = 0;
  for (std::size_t i = 0; i < va.size(); ++i) d = std::max(d, static_cast<double>(std::fabs(va[i] - vb[i])));
  return d;
}

void register_npp_filters() {
  const double pixels = static_cast<double>(kSide * kSide);
  const NppiSize size = b::npp_size(kSide, kSide);
  const int step = static_cast<int>(kSide * sizeof(float));
  const NppiPoint origin{0, 0};
  for (int k : {5, 15}) {
    const std::string op = "filter2d_" + std::to_string(k) + "x" + std::to_string(k);
    benchmark::RegisterBenchmark(b::name(op, "f32", kShape, "npp").c_str(), [=](benchmark::State& st) {
      const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
      const std::vector<float> w = box_like_kernel(k);
      const std::vector<float> flipped(w.rbegin(), w.rend());  // NPP convolves: its kernel is reversed
      const auto kernel = DeviceMatrix<float>::from_vector(flipped, k, k);
      DeviceMatrix<float> out(kSide, kSide, img.stream());
      const NppStreamContext ctx = b::npp_context(img.stream().native());
      const auto run = [&] {
        DEVMAT_BENCH_NPP(nppiFilterBorder_32f_C1R_Ctx(img.data(), step, size, origin, out.data(), step, size,
                                                      kernel.data(), NppiSize{k, k}, NppiPoint{k / 2, k / 2},
                                                      NPP_BORDER_REPLICATE, ctx));
      };
      run();
      st.counters["max_diff"] = max_diff(out, devmat::filter2d(img, DeviceMatrix<float>::from_vector(w, k, k)));
      b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, run);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark(b::name("gaussian_blur", "f32", kShape, "npp").c_str(), [=](benchmark::State& st) {
    const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
    const int radius = static_cast<int>(std::ceil(3.0 * kSigma));
    std::vector<double> wd(2 * radius + 1);
    double sum = 0;
    for (int d = -radius; d <= radius; ++d) sum += wd[d + radius] = std::exp(-0.5 * d * d / (double(kSigma) * kSigma));
    std::vector<float> w(wd.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(wd[i] / sum);  // symmetric: no flip needed
    const auto taps = DeviceMatrix<float>::from_vector(w, 1, static_cast<Index>(w.size()));
    DeviceMatrix<float> tmp(kSide, kSide, img.stream()), out(kSide, kSide, img.stream());
    const NppStreamContext ctx = b::npp_context(img.stream().native());
    const int n = static_cast<int>(w.size());
    const auto run = [&] {
      DEVMAT_BENCH_NPP(nppiFilterRowBorder_32f_C1R_Ctx(img.data(), step, size, origin, tmp.data(), step, size,
                                                       taps.data(), n, radius, NPP_BORDER_REPLICATE, ctx));
      DEVMAT_BENCH_NPP(nppiFilterColumnBorder_32f_C1R_Ctx(tmp.data(), step, size, origin, out.data(), step, size,
                                                          taps.data(), n, radius, NPP_BORDER_REPLICATE, ctx));
    };
    run();
    st.counters["max_diff"] = max_diff(out, devmat::gaussian_blur(img, kSigma));
    b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, run);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  // Sobel: x and y alone ("npp"), and with the magnitude as ours computes it ("npp-magnitude").
  for (const bool magnitude : {false, true}) {
    benchmark::RegisterBenchmark(b::name("sobel", "f32", kShape, magnitude ? "npp-magnitude" : "npp").c_str(),
                                 [=](benchmark::State& st) {
      const auto img = DeviceMatrix<float>::from_vector(image(), kSide, kSide);
      DeviceMatrix<float> gx(kSide, kSide, img.stream()), gy(kSide, kSide, img.stream()), out(kSide, kSide, img.stream());
      const NppStreamContext ctx = b::npp_context(img.stream().native());
      const auto run = [&] {
        DEVMAT_BENCH_NPP(nppiFilterSobelHorizBorder_32f_C1R_Ctx(img.data(), step, size, origin, gx.data(), step, size,
                                                                NPP_BORDER_REPLICATE, ctx));
        DEVMAT_BENCH_NPP(nppiFilterSobelVertBorder_32f_C1R_Ctx(img.data(), step, size, origin, gy.data(), step, size,
                                                               NPP_BORDER_REPLICATE, ctx));
        if (magnitude) {
          DEVMAT_BENCH_NPP(nppiSqr_32f_C1R_Ctx(gx.data(), step, out.data(), step, size, ctx));
          DEVMAT_BENCH_NPP(nppiAddSquare_32f_C1IR_Ctx(gy.data(), step, out.data(), step, size, ctx));
          DEVMAT_BENCH_NPP(nppiSqrt_32f_C1IR_Ctx(out.data(), step, size, ctx));
        }
      };
      run();
      if (!magnitude) {  // the magnitude of NPP's x and y, computed by ours, against ours
        DeviceMatrix<float> mag = sqrt(square(gx) + square(gy));
        st.counters["max_diff"] = max_diff(mag, devmat::sobel(img));
      } else {
        st.counters["max_diff"] = max_diff(out, devmat::sobel(img));
      }
      b::time_on_stream(st, img.stream().native(), pixels, b::kMpixps, run);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}
#endif
}  // namespace

int main(int argc, char** argv) {
  register_filter2d(5);
  register_filter2d(15);
  register_gaussian();
  register_sobel();
#if DEVMAT_BENCH_HAVE_NPP
  register_npp_filters();
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
