// image_pipeline: an edge-detection pipeline on the GPU, each stage beside the same stage on
// the CPU (Eigen, one thread), with its time, the speed-up and the largest difference.
//
//   image_pipeline [image [output_folder]]
//
//   image          PNG, JPEG, BMP or PGM/PPM, read with load_gray (colour becomes luma). Without
//                  it (or with "-"), a built-in 4096x4096 test image is generated (gradients,
//                  edges, text-like strokes and noise).
//   output_folder  where each stage is saved as a PNG (default ./pipeline_out).
//
// Stages: upload, to float (cast<float>), normalise by the mean (img / mean, an expression
// that reads the mean on the device: no host round trip), Gaussian blur (sigma 2), Sobel
// gradient magnitude, threshold (edges where the gradient exceeds 0.5, in units of the image's
// mean brightness: `(magnitude > 0.5) * 255`, an expression).
//
// Then what fusion saves: formulas a user writes as one expression (to float and normalise;
// the gradient magnitude sqrt(gx^2 + gy^2) of two derivative filters, thresholded) timed as
// one kernel and as one operator at a time.
//
// Timing: the whole GPU pipeline runs once as a warm-up; then each stage is timed with CUDA
// events on the image's stream (the best of several runs) and on the CPU with a host clock
// (one run). The CPU stage gets the GPU's input to that stage, so each difference measures that
// stage alone. Differences are relative to the value range (max - min) of the stage's output.
//
// Saved PNGs: the uint8 stages as they are; each float stage mapped linearly from its own
// [min, max] onto 0..255 (on the GPU: (x - min) * 255 / (max - min), rounded by cast<uint8_t>),
// so every PNG shows the full contrast of its stage (a constant stage saves as black).
//
// Exit status: 0 when every stage agrees with the CPU within 1e-3 of its range; 1 when one does
// not, or on a file error; 2 when no CUDA device can be used (or CUDA fails).
#include "cpu_stages.hpp"

#include <devmat/devmat.hpp>

#include <cuda_runtime_api.h>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
using HostF = cpu_stages::HostF;
using Host8 = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr Index kDefaultSide = 4096;
constexpr float kSigma = 2.f;
constexpr float kEdgeThreshold = 0.5f;  // gradient magnitude, in units of the mean brightness
constexpr double kTolerance = 1e-3;     // largest accepted difference, relative to the range
constexpr int kGpuRuns = 10;            // each GPU stage: the best of these

// ------------------------------------------------------------------ the default image
/// Draws a segment of width `w` and value `ink` by stamping squares along it.
void stroke(HostF& img, float x0, float y0, float x1, float y1, float w, float ink) {
  const float len = std::hypot(x1 - x0, y1 - y0);
  const int steps = std::max(1, static_cast<int>(len * 2));
  for (int s = 0; s <= steps; ++s) {
    const float t = static_cast<float>(s) / steps;
    const float cx = x0 + t * (x1 - x0), cy = y0 + t * (y1 - y0);
    const Index ya = std::max<Index>(0, static_cast<Index>(cy - w / 2));
    const Index yb = std::min<Index>(img.rows(), static_cast<Index>(cy + w / 2) + 1);
    const Index xa = std::max<Index>(0, static_cast<Index>(cx - w / 2));
    const Index xb = std::min<Index>(img.cols(), static_cast<Index>(cx + w / 2) + 1);
    for (Index y = ya; y < yb; ++y)
      for (Index x = xa; x < xb; ++x) img(y, x) = ink;
  }
}

/// A side x side gray image: smooth gradients, filled rectangles and discs (sharp edges), lines
/// of text-like glyphs (three strokes each between points of a 3x4 lattice), and noise.
Host8 make_default_image(Index side) {
  std::mt19937 gen(20240607);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const float n = static_cast<float>(side);
  HostF img(side, side);
  for (Index y = 0; y < side; ++y)
    for (Index x = 0; x < side; ++x) {
      const float fx = x / n, fy = y / n;
      const float r = std::hypot(fx - 0.7f, fy - 0.3f);
      img(y, x) = 60.f + 90.f * fx + 40.f * fy + 35.f * std::cos(12.f * r);
    }
  for (int i = 0; i < 40; ++i) {  // rectangles
    const Index h = static_cast<Index>(n * (0.02f + 0.12f * u(gen))), w = static_cast<Index>(n * (0.02f + 0.12f * u(gen)));
    const Index y = static_cast<Index>(u(gen) * (side - h)), x = static_cast<Index>(u(gen) * (side - w));
    img.block(y, x, h, w).setConstant(255.f * u(gen));
  }
  for (int i = 0; i < 30; ++i) {  // discs
    const float cy = u(gen) * n, cx = u(gen) * n, rad = n * (0.01f + 0.06f * u(gen)), v = 255.f * u(gen);
    for (Index y = std::max<Index>(0, Index(cy - rad)); y < std::min<Index>(side, Index(cy + rad) + 1); ++y)
      for (Index x = std::max<Index>(0, Index(cx - rad)); x < std::min<Index>(side, Index(cx + rad) + 1); ++x)
        if (std::hypot(x - cx, y - cy) <= rad) img(y, x) = v;
  }
  // Text: lines of words in a band of the image, dark ink on whatever lies below.
  const float gw = std::max(6.f, n / 170.f), gh = 1.5f * gw, pen = std::max(1.5f, gw / 8.f);
  for (float ly = 0.55f * n; ly + gh < 0.95f * n; ly += 2.f * gh) {
    for (float lx = 0.05f * n; lx + gw < 0.95f * n;) {
      const int letters = 2 + static_cast<int>(u(gen) * 7);
      for (int l = 0; l < letters && lx + gw < 0.95f * n; ++l, lx += 1.25f * gw)
        for (int s = 0; s < 3; ++s) {
          auto pt = [&](float& px, float& py) {
            px = lx + gw * 0.5f * static_cast<int>(u(gen) * 3);
            py = ly + gh / 3.f * static_cast<int>(u(gen) * 4);
          };
          float x0, y0, x1, y1;
          pt(x0, y0);
          pt(x1, y1);
          stroke(img, x0, y0, x1, y1, pen, 20.f);
        }
      lx += 1.5f * gw;  // space between words
    }
  }
  std::normal_distribution<float> noise(0.f, 6.f);
  Host8 out(side, side);
  for (Index i = 0; i < img.size(); ++i)
    out.data()[i] = static_cast<std::uint8_t>(std::clamp(std::nearbyint(img.data()[i] + noise(gen)), 0.f, 255.f));
  return out;
}

// ------------------------------------------------------------------ the CPU stages (Eigen)
HostF normalise_cpu(const HostF& f) {
  const double mean = f.cast<double>().mean();
  return (f.array() / static_cast<float>(mean)).matrix();
}

Host8 threshold_cpu(const HostF& img, float t) {
  return ((img.array() > t).cast<std::uint8_t>() * std::uint8_t(255)).matrix();
}

// ------------------------------------------------------------------ timing and comparing
/// Best time in ms of `runs` runs of `f` (which queues work on `stream`), by CUDA events.
template <class F>
double time_gpu(const devmat::Stream& stream, int runs, F&& f) {
  cudaEvent_t start, stop;
  DEVMAT_CUDA_TRY(cudaEventCreate(&start));
  DEVMAT_CUDA_TRY(cudaEventCreate(&stop));
  float best = std::numeric_limits<float>::infinity();
  for (int i = 0; i < runs; ++i) {
    DEVMAT_CUDA_TRY(cudaEventRecord(start, stream.native()));
    f();
    DEVMAT_CUDA_TRY(cudaEventRecord(stop, stream.native()));
    DEVMAT_CUDA_TRY(cudaEventSynchronize(stop));
    float ms = 0;
    DEVMAT_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

template <class F>
double time_cpu(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// max |gpu - cpu| / (max - min of cpu), 0 for a constant stage that matches exactly.
template <class M>
double relative_diff(const M& gpu, const M& cpu) {
  const Eigen::ArrayXXd g = gpu.template cast<double>().array(), c = cpu.template cast<double>().array();
  const double diff = (g - c).abs().maxCoeff();
  const double range = c.maxCoeff() - c.minCoeff();
  if (std::isnan(diff)) return std::numeric_limits<double>::infinity();
  return range > 0 ? diff / range : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
}

struct Row {
  std::string stage;
  double gpu_ms, cpu_ms, diff;  // cpu_ms < 0: no CPU counterpart
};

DeviceMatrix<std::uint8_t> to_u8(const DeviceMatrix<float>& m) {
  const float lo = m.min(), hi = m.max();
  if (!(hi > lo)) return DeviceMatrix<std::uint8_t>::zeros(m.rows(), m.cols(), m.stream());
  return devmat::cast<std::uint8_t>((m - lo) * (255.f / (hi - lo)));  // one kernel
}

int run(int argc, char** argv) {
  // A device first, so a machine without one stops here, before any work.
  const devmat::Stream stream = devmat::Stream::create();
  cudaDeviceProp prop{};
  int dev = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&dev));
  DEVMAT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));

  const std::string out_dir = argc > 2 ? argv[2] : "pipeline_out";
  const bool save = devmat::image_io_available();

  // ---- load or generate (host), then the upload is the first timed stage
  Host8 input;
  if (argc > 1 && std::string(argv[1]) != "-") {
    const auto loaded = devmat::load_gray(argv[1], stream);
    input.resize(loaded.rows(), loaded.cols());
    loaded.copy_to_host(input.data());
    std::printf("input: %s, %lldx%lld\n", argv[1], static_cast<long long>(input.rows()),
                static_cast<long long>(input.cols()));
  } else {
    input = make_default_image(kDefaultSide);
    std::printf("input: built-in test image, %lldx%lld\n", static_cast<long long>(kDefaultSide),
                static_cast<long long>(kDefaultSide));
  }
  const Index rows = input.rows(), cols = input.cols();
  std::printf("GPU: %s; CPU: Eigen, one thread\n", prop.name);

  // ---- the GPU pipeline, once to warm up (module loading, pool growth)
  DeviceMatrix<std::uint8_t> g8;
  DeviceMatrix<float> gf, gnorm, gblur, gsobel;
  DeviceMatrix<std::uint8_t> gedges;
  auto upload = [&] { g8 = DeviceMatrix<std::uint8_t>::from_host(input.data(), rows, cols, stream); };
  auto to_float = [&] { gf = g8.cast<float>(); };
  auto normalise = [&] { gnorm = gf / devmat::cast<float>(gf.mean_async()); };
  auto blur = [&] { gblur = devmat::gaussian_blur(gnorm, kSigma); };
  auto edges = [&] { gsobel = devmat::sobel(gblur); };
  auto threshold = [&] { gedges = (gsobel > kEdgeThreshold) * 255; };
  upload(), to_float(), normalise(), blur(), edges(), threshold();
  stream.synchronize();

  // ---- each stage: GPU time, then the CPU on the GPU's input to that stage
  std::vector<Row> table;
  auto host_f = [](const DeviceMatrix<float>& m) {
    HostF h(m.rows(), m.cols());
    m.copy_to_host(h.data());
    return h;
  };
  auto host_8 = [](const DeviceMatrix<std::uint8_t>& m) {
    Host8 h(m.rows(), m.cols());
    m.copy_to_host(h.data());
    return h;
  };
  {
    const double g = time_gpu(stream, kGpuRuns, upload);
    table.push_back({"upload (host to device)", g, -1, relative_diff(host_8(g8), input)});
  }
  {
    const double g = time_gpu(stream, kGpuRuns, to_float);
    HostF c;
    const double t = time_cpu([&] { c = input.cast<float>(); });
    table.push_back({"to float (cast<float>)", g, t, relative_diff(host_f(gf), c)});
  }
  {
    const double g = time_gpu(stream, kGpuRuns, normalise);
    const HostF in = host_f(gf);
    HostF c;
    const double t = time_cpu([&] { c = normalise_cpu(in); });
    table.push_back({"normalise (img / mean)", g, t, relative_diff(host_f(gnorm), c)});
  }
  {
    const double g = time_gpu(stream, kGpuRuns, blur);
    const HostF in = host_f(gnorm);
    HostF c;
    const double t = time_cpu([&] { c = cpu_stages::gaussian_blur(in, kSigma); });
    table.push_back({"gaussian blur (sigma 2)", g, t, relative_diff(host_f(gblur), c)});
  }
  {
    const double g = time_gpu(stream, kGpuRuns, edges);
    const HostF in = host_f(gblur);
    HostF c;
    const double t = time_cpu([&] { c = cpu_stages::sobel(in); });
    table.push_back({"sobel magnitude", g, t, relative_diff(host_f(gsobel), c)});
  }
  {
    const double g = time_gpu(stream, kGpuRuns, threshold);
    const HostF in = host_f(gsobel);
    Host8 c;
    const double t = time_cpu([&] { c = threshold_cpu(in, kEdgeThreshold); });
    table.push_back({"threshold (> 0.5)", g, t, relative_diff(host_8(gedges), c)});
  }

  // ---- the table
  std::printf("\n%-26s %12s %12s %10s %16s\n", "stage", "GPU ms", "CPU ms", "speed-up", "max diff/range");
  bool ok = true;
  double gpu_total = 0, cpu_total = 0;
  for (const Row& r : table) {
    const bool stage_ok = r.diff <= kTolerance;
    ok = ok && stage_ok;
    gpu_total += r.gpu_ms;
    if (r.cpu_ms >= 0) {
      cpu_total += r.cpu_ms;
      std::printf("%-26s %12.3f %12.1f %9.0fx %16.2e%s\n", r.stage.c_str(), r.gpu_ms, r.cpu_ms, r.cpu_ms / r.gpu_ms,
                  r.diff, stage_ok ? "" : "  <-- FAIL");
    } else {
      std::printf("%-26s %12.3f %12s %10s %16.2e%s\n", r.stage.c_str(), r.gpu_ms, "-", "-", r.diff,
                  stage_ok ? "" : "  <-- FAIL");
    }
  }
  std::printf("%-26s %12.3f %12.1f\n", "total", gpu_total, cpu_total);
  const Host8 e = host_8(gedges);
  std::printf("edges: %.2f%% of the pixels\n", 100.0 * (e.array() != 0).count() / static_cast<double>(e.size()));

  // ---- what fusion saves: formulas as one expression, and one operator at a time
  {
    using devmat::cast;
    std::printf("\nfusion (one kernel per formula, against one kernel per operator):\n");
    const auto report = [&](const char* what, double fused, double unfused) {
      std::printf("  %-52s %8.3f ms  (unfused %8.3f ms: %.1fx, %.0f%% saved)\n", what, fused, unfused, unfused / fused,
                  100.0 * (1.0 - fused / unfused));
    };
    DeviceMatrix<float> f1, u1;
    const DeviceMatrix<double> mean8 = g8.mean_async();
    const double fused1 = time_gpu(stream, kGpuRuns, [&] { f1 = cast<float>(g8) / cast<float>(mean8); });
    const double unfused1 = time_gpu(stream, kGpuRuns, [&] {
      u1 = g8.cast<float>();
      const DeviceMatrix<float> m = mean8.cast<float>();
      u1 = u1 / m;
    });
    report("to float and normalise: cast<float>(img) / mean", fused1, unfused1);
    // The gradient magnitude of two derivative filters, thresholded: sobel() does it in one
    // filter kernel; a user with their own derivative kernels writes the formula.
    const float kx[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1}, ky[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    const auto dx = DeviceMatrix<float>::from_host(kx, 3, 3, stream), dy = DeviceMatrix<float>::from_host(ky, 3, 3, stream);
    const DeviceMatrix<float> gx = devmat::filter2d(gblur, dx), gy = devmat::filter2d(gblur, dy);
    DeviceMatrix<std::uint8_t> f2, u2;
    const double fused2 =
        time_gpu(stream, kGpuRuns, [&] { f2 = (sqrt(square(gx) + square(gy)) > kEdgeThreshold) * 255; });
    const double unfused2 = time_gpu(stream, kGpuRuns, [&] {
      DeviceMatrix<float> a = square(gx);
      DeviceMatrix<float> b = square(gy);
      a = a + b;
      a = sqrt(a);
      const DeviceMatrix<std::uint8_t> m = a > kEdgeThreshold;
      u2 = m * 255;
    });
    report("edges: (sqrt(square(gx) + square(gy)) > 0.5) * 255", fused2, unfused2);
    const bool same = (host_f(f1) == host_f(u1)) && (host_8(f2) == host_8(u2));
    std::printf("  fused and unfused results bitwise equal: %s\n", same ? "yes" : "NO");
    ok = ok && same;
  }

  // ---- the PNGs
  if (save) {
    std::filesystem::create_directories(out_dir);
    const auto path = [&](const char* name) { return (std::filesystem::path(out_dir) / name).string(); };
    devmat::save_image(path("0_input.png"), g8);
    devmat::save_image(path("1_float.png"), to_u8(gf));
    devmat::save_image(path("2_normalised.png"), to_u8(gnorm));
    devmat::save_image(path("3_blur.png"), to_u8(gblur));
    devmat::save_image(path("4_sobel.png"), to_u8(gsobel));
    devmat::save_image(path("5_edges.png"), gedges);
    std::printf("wrote 6 PNGs to %s/ (float stages scaled from their [min, max] to 0..255)\n", out_dir.c_str());
  } else {
    std::printf("PNGs are not written: libdevmat was built without image I/O (stb_image not found)\n");
  }

  if (!ok) {
    std::fprintf(stderr, "image_pipeline: a stage differs from the CPU by more than %.0e of its range\n", kTolerance);
    return 1;
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const devmat::cuda_error& e) {
    std::fprintf(stderr, "image_pipeline: this example needs a working CUDA device:\n  %s\n", e.what());
    return 2;
  } catch (const devmat::io_error& e) {
    std::fprintf(stderr, "image_pipeline: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "image_pipeline: error: %s\n", e.what());
    return 1;
  }
}
