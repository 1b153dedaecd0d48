// batch_pipeline: a folder of images through decode -> upload -> colour to gray -> resize ->
// blur -> edges -> download -> encode, with the GPU fed by CPU threads, several streams in
// flight and pinned host buffers, so that transfers, kernels and the CPU's codec overlap. It
// prints images per second, where the time goes and whether the GPU part is the bottleneck,
// and, where OpenCV was found at build time, the same stages with OpenCV on every CPU core.
//
//   batch_pipeline [options] [folder]
//
//   folder            images to read (PNG, JPEG, BMP, PGM/PPM; colour or gray). Without it, --count
//                     synthetic colour images of --size are generated into a temporary folder.
//   --count N         images to generate (default 64)
//   --size WxH        their size (default 1920x1080)
//   --format png|ppm  their format (default png)
//   --scale F         the resize factor (default 0.5)
//   --streams S       GPU streams in flight, one host thread each (default 3)
//   --decoders D      decode threads (default: 3/4 of the cores)
//   --encoders E      encode threads (default: 1/4 of the cores, at least 1)
//   --out DIR         where the edge images are written as PNG (default: a temporary folder)
//   --keep            keep the temporary folders (generated images and outputs)
//   --no-opencv       skip the OpenCV comparison
//   --verify          afterwards, run every image again through the blocking calls (load_rgb and
//                     the same operations, one at a time) and compare each written PNG with that
//                     result, bit for bit: exit status 1 if one differs (the ctest smoke test)
//
// Per image: the decoded interleaved RGB bytes go up as they are (copy_from_host_async from a
// PinnedBuffer), split_channels and rgb_to_gray run on the GPU, then resize (linear), a 5x5 box
// blur (cv::blur) and canny(50, 150); the edges come down into another PinnedBuffer
// (copy_to_host_async) and an encode thread writes them as PNG. Decode threads take free jobs
// (a job: a pinned input and output buffer and four CUDA events), so at most a fixed number of
// images is in flight. Each stream has a host thread, because canny reads its hysteresis flag
// on the host: while one thread waits, the others queue uploads and kernels.
//
// Timing: one image goes through every stream first (kernel loading, pinned buffers sized),
// untimed. Decode and encode are timed on their threads with a host clock; upload, GPU stages
// and download with CUDA events on the image's stream. Event times include waiting for an
// engine another stream holds, so the busy fractions below come from the union over images of
// the event intervals (time in which some stream had that kind of work running or queued),
// divided by the wall time. "capacity" is the images per second a stage could sustain on its
// own: its workers / its mean time per image; the smallest is the bottleneck.
//
// Exit status: 0 on success; 1 on an error (a file that cannot be read, image I/O missing from
// libdevmat); 77 when no CUDA device can be used (ctest's "skipped").
#include <devmat/devmat.hpp>

#include <cuda_runtime_api.h>

#if BATCH_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {
namespace fs = std::filesystem;
using devmat::DeviceMatrix;
using devmat::Index;
using Clock = std::chrono::steady_clock;

constexpr double kCannyLow = 50, kCannyHigh = 150;
constexpr int kBlur = 5;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ------------------------------------------------------------------ options
struct Options {
  std::string folder;  // empty: generate
  int count = 64;
  Index width = 1920, height = 1080;
  std::string format = "png";
  double scale = 0.5;
  int streams = 3, decoders = 0, encoders = 0;
  std::string out;
  bool keep = false, opencv = true, verify = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "batch_pipeline: %s\nusage: batch_pipeline [--count N] [--size WxH] [--format png|ppm] [--scale F]\n"
               "                      [--streams S] [--decoders D] [--encoders E] [--out DIR] [--keep]\n"
               "                      [--no-opencv] [--verify] [folder]\n",
               why.c_str());
  std::exit(1);
}

Options parse(int argc, char** argv) {
  Options o;
  const auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  const auto positive = [&](const std::string& s, const char* what) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (!end || *end || v < 1 || v > 1000000) usage(std::string(what) + " must be a positive integer, not '" + s + "'");
    return static_cast<int>(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count") o.count = positive(value(i), "--count");
    else if (a == "--size") {
      const std::string v = value(i);
      const std::size_t x = v.find('x');
      if (x == std::string::npos) usage("--size takes WxH, e.g. 1920x1080");
      o.width = positive(v.substr(0, x), "--size width");
      o.height = positive(v.substr(x + 1), "--size height");
    } else if (a == "--format") {
      o.format = value(i);
      if (o.format != "png" && o.format != "ppm") usage("--format is png or ppm");
    } else if (a == "--scale") {
      o.scale = std::atof(value(i).c_str());
      if (!(o.scale > 0 && o.scale <= 4)) usage("--scale must be in (0, 4]");
    } else if (a == "--streams") o.streams = positive(value(i), "--streams");
    else if (a == "--decoders") o.decoders = positive(value(i), "--decoders");
    else if (a == "--encoders") o.encoders = positive(value(i), "--encoders");
    else if (a == "--out") o.out = value(i);
    else if (a == "--keep") o.keep = true;
    else if (a == "--no-opencv") o.opencv = false;
    else if (a == "--verify") o.verify = true;
    else if (a == "-h" || a == "--help") usage("a batch of images through the GPU");
    else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
    else if (o.folder.empty()) o.folder = a;
    else usage("more than one folder given");
  }
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (o.decoders == 0) o.decoders = std::max(1, cores * 3 / 4);
  if (o.encoders == 0) o.encoders = std::max(1, cores / 4);
  return o;
}

// ------------------------------------------------------------------ a queue between threads
template <class T>
class Queue {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  /// The next item; none once the queue is closed and empty, or aborted.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return aborted_ || closed_ || !items_.empty(); });
    if (aborted_ || items_.empty()) return std::nullopt;
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }
  void close() { set(closed_); }
  void abort() { set(aborted_); }

 private:
  void set(bool& flag) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      flag = true;
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false, aborted_ = false;
};

// ------------------------------------------------------------------ the input images
/// A synthetic colour image: gradients, filled rectangles and discs of random colours, noise.
std::vector<std::uint8_t> synthetic(Index rows, Index cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255), noise(-6, 6);
  std::vector<std::uint8_t> img(static_cast<std::size_t>(rows * cols * 3));
  const int g0 = byte(gen), g1 = byte(gen);
  for (Index y = 0; y < rows; ++y)
    for (Index x = 0; x < cols; ++x) {
      std::uint8_t* p = &img[static_cast<std::size_t>((y * cols + x) * 3)];
      p[0] = static_cast<std::uint8_t>(g0 * x / std::max<Index>(1, cols - 1));
      p[1] = static_cast<std::uint8_t>(g1 * y / std::max<Index>(1, rows - 1));
      p[2] = static_cast<std::uint8_t>(128 + 100 * std::sin(0.01 * static_cast<double>(x + y)));
    }
  std::uniform_real_distribution<double> u(0, 1);
  for (int s = 0; s < 40; ++s) {
    const Index cy = static_cast<Index>(u(gen) * rows), cx = static_cast<Index>(u(gen) * cols);
    const Index h = static_cast<Index>(u(gen) * rows / 4) + 2, w = static_cast<Index>(u(gen) * cols / 4) + 2;
    const bool disc = s % 2 == 1;
    const std::uint8_t c[3] = {static_cast<std::uint8_t>(byte(gen)), static_cast<std::uint8_t>(byte(gen)),
                               static_cast<std::uint8_t>(byte(gen))};
    for (Index y = std::max<Index>(0, cy - h); y < std::min(rows, cy + h); ++y)
      for (Index x = std::max<Index>(0, cx - w); x < std::min(cols, cx + w); ++x) {
        const double dy = static_cast<double>(y - cy) / h, dx = static_cast<double>(x - cx) / w;
        if (disc && dx * dx + dy * dy > 1) continue;
        std::memcpy(&img[static_cast<std::size_t>((y * cols + x) * 3)], c, 3);
      }
  }
  for (std::uint8_t& v : img) v = static_cast<std::uint8_t>(std::clamp(v + noise(gen), 0, 255));
  return img;
}

void generate(const Options& o, const fs::path& dir, int threads) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex error_mu;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      try {
        for (int i; (i = next++) < o.count;) {
          const auto img = synthetic(o.height, o.width, 1000u + static_cast<unsigned>(i));
          char name[32];
          std::snprintf(name, sizeof name, "img_%04d.%s", i, o.format.c_str());
          devmat::write_image((dir / name).string(), img.data(), o.height, o.width, 3);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

std::vector<std::string> list_images(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".pgm" || ext == ".ppm")
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string output_name(const fs::path& dir, const std::string& input) {
  return (dir / (fs::path(input).stem().string() + "_edges.png")).string();
}

Index scaled(Index n, double scale) { return std::max<Index>(1, static_cast<Index>(std::lround(n * scale))); }

// ------------------------------------------------------------------ the GPU pipeline
/// One image in flight: its pinned buffers and the events that time its GPU part.
struct Job {
  int index = -1;
  devmat::ImageShape shape;
  Index out_rows = 0, out_cols = 0;
  devmat::PinnedBuffer<std::uint8_t> in, out;
  cudaEvent_t ev[4] = {};  // before the upload, after it, after the GPU stages, after the download
  double decode_s = 0;

  Job() {
    for (int k = 0; k < 4; ++k)  // the last one is waited on by an encode thread: it sleeps, not spins
      DEVMAT_CUDA_TRY(cudaEventCreateWithFlags(&ev[k], k == 3 ? cudaEventBlockingSync : cudaEventDefault));
  }
  ~Job() {
    for (cudaEvent_t e : ev) cudaEventDestroy(e);
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
};

/// Queues the GPU part of `job` on `stream`: upload, split, gray, resize, blur, canny, download.
/// Returns when canny has finished its hysteresis (it reads a flag on the host); the download
/// is queued, not waited for.
void gpu_stages(Job& job, const devmat::Stream& stream, double scale) {
  const cudaStream_t s = stream.native();
  const Index rows = job.shape.rows, cols = job.shape.cols;
  job.out_rows = scaled(rows, scale);
  job.out_cols = scaled(cols, scale);
  DEVMAT_CUDA_TRY(cudaEventRecord(job.ev[0], s));
  DeviceMatrix<std::uint8_t> interleaved(rows, 3 * cols, stream);
  interleaved.copy_from_host_async(job.in.data());  // the decoded bytes as they are
  DEVMAT_CUDA_TRY(cudaEventRecord(job.ev[1], s));
  const std::vector<DeviceMatrix<std::uint8_t>> rgb = devmat::split_channels(interleaved, 3);
  const DeviceMatrix<std::uint8_t> gray = devmat::rgb_to_gray(rgb[0], rgb[1], rgb[2]);
  const DeviceMatrix<std::uint8_t> small = devmat::resize(gray, job.out_rows, job.out_cols, devmat::Interp::linear);
  const DeviceMatrix<std::uint8_t> blurred = devmat::box_filter(small, kBlur, kBlur);
  const DeviceMatrix<std::uint8_t> edges = devmat::canny(blurred, kCannyLow, kCannyHigh);
  DEVMAT_CUDA_TRY(cudaEventRecord(job.ev[2], s));
  job.out.resize(static_cast<std::size_t>(edges.size()));
  edges.copy_to_host_async(job.out.data());
  DEVMAT_CUDA_TRY(cudaEventRecord(job.ev[3], s));
}  // the matrices are freed stream-ordered, after the download

/// What the timed run measured, per image.
struct Sample {
  double decode_s = 0, encode_s = 0;
  double t[4] = {};  // event times (s) from the run's start event: upload begins, GPU begins, download begins, ends
};

/// Sum of the lengths of the union of intervals.
double union_length(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0, lo = 0, hi = -1;
  for (const auto& [a, b] : v) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

class Progress {
 public:
  Progress(const char* what, int total) : what_(what), total_(total), tty_(::isatty(1) != 0), t0_(Clock::now()) {}
  void show(int done, bool last = false) {
    const int step = std::max(1, total_ / 8);
    if (!last && !tty_ && done / step == shown_ / step) return;  // a log: a line every eighth
    shown_ = done;
    const double s = seconds_since(t0_);
    std::printf("%s[%s %*d/%d] %7.1f images/s%s", tty_ ? "\r" : "  ", what_, static_cast<int>(std::to_string(total_).size()),
                done, total_, s > 0 ? done / s : 0.0, tty_ && !last ? "" : "\n");
    std::fflush(stdout);
  }

 private:
  const char* what_;
  int total_, shown_ = 0;
  bool tty_;
  Clock::time_point t0_;
};

/// Shows the progress of `done` out of n every 100 ms until all are done or `error` (read under
/// `mu`) is set.
void follow(const char* what, int n, const std::atomic<int>& done, std::mutex& mu, const std::exception_ptr& error) {
  Progress progress(what, n);
  for (int d = 0; d < n;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    {
      std::lock_guard<std::mutex> lock(mu);
      if (error) return;
    }
    d = done;
    progress.show(d, d == n);
  }
}

struct RunResult {
  double wall_s = 0;
  std::vector<Sample> samples;
  std::vector<std::uint8_t> first_edges;  // image 0's output, for the comparison with OpenCV
  Index first_rows = 0, first_cols = 0;
};

RunResult run_gpu(const Options& o, const std::vector<std::string>& files, const fs::path& out_dir) {
  const int n = static_cast<int>(files.size());
  const int n_jobs = o.decoders + 2 * o.streams + o.encoders;
  std::vector<std::unique_ptr<Job>> jobs;
  for (int j = 0; j < n_jobs; ++j) jobs.push_back(std::make_unique<Job>());
  std::vector<devmat::Stream> streams;
  for (int k = 0; k < o.streams; ++k) streams.push_back(devmat::Stream::create());

  // Warm-up, untimed: the first image through every stream (kernels load, the pool fills), and
  // every job's pinned buffers sized for it.
  {
    Job& w = *jobs[0];
    w.shape = devmat::read_image(files[0], 3, w.in);
    for (const devmat::Stream& s : streams) {
      gpu_stages(w, s, o.scale);
      s.synchronize();
    }
    for (auto& j : jobs) {
      j->in.resize(w.in.size());
      j->out.resize(w.out.size());
    }
  }

  Queue<Job*> free_jobs, decoded, downloading;
  for (auto& j : jobs) free_jobs.push(j.get());
  RunResult result;
  result.samples.resize(static_cast<std::size_t>(n));
  std::atomic<int> next{0}, done{0}, decoders_left{o.decoders}, gpus_left{o.streams};
  std::exception_ptr error;
  std::mutex error_mu;
  Clock::time_point finished;  // when the last image was written (under error_mu)
  const auto fail = [&] {
    {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
    }
    free_jobs.abort();
    decoded.abort();
    downloading.abort();
  };

  cudaEvent_t start;
  DEVMAT_CUDA_TRY(cudaEventCreate(&start));
  DEVMAT_CUDA_TRY(cudaEventRecord(start, streams[0].native()));
  DEVMAT_CUDA_TRY(cudaEventSynchronize(start));
  const auto t0 = Clock::now();

  std::vector<std::thread> threads;
  for (int t = 0; t < o.decoders; ++t)
    threads.emplace_back([&] {
      try {
        for (int i; (i = next++) < n;) {
          const std::optional<Job*> job = free_jobs.pop();
          if (!job) break;  // aborted
          Job& j = **job;
          const auto td = Clock::now();
          j.index = i;
          j.shape = devmat::read_image(files[static_cast<std::size_t>(i)], 3, j.in);
          j.decode_s = seconds_since(td);
          decoded.push(&j);
        }
      } catch (...) {
        fail();
      }
      if (--decoders_left == 0) decoded.close();
    });
  for (int k = 0; k < o.streams; ++k)
    threads.emplace_back([&, k] {
      try {
        while (const std::optional<Job*> job = decoded.pop()) {
          gpu_stages(**job, streams[static_cast<std::size_t>(k)], o.scale);
          downloading.push(*job);
        }
      } catch (...) {
        fail();
      }
      if (--gpus_left == 0) downloading.close();
    });
  for (int t = 0; t < o.encoders; ++t)
    threads.emplace_back([&] {
      try {
        while (const std::optional<Job*> job = downloading.pop()) {
          Job& j = **job;
          DEVMAT_CUDA_TRY(cudaEventSynchronize(j.ev[3]));  // the edges are in j.out
          Sample& s = result.samples[static_cast<std::size_t>(j.index)];
          s.decode_s = j.decode_s;
          for (int k = 0; k < 4; ++k) {
            float ms = 0;
            DEVMAT_CUDA_TRY(cudaEventElapsedTime(&ms, start, j.ev[k]));
            s.t[k] = ms * 1e-3;
          }
          const auto te = Clock::now();
          devmat::write_image(output_name(out_dir, files[static_cast<std::size_t>(j.index)]), j.out.data(), j.out_rows,
                              j.out_cols, 1);
          s.encode_s = seconds_since(te);
          if (j.index == 0) {
            result.first_edges.assign(j.out.begin(), j.out.end());
            result.first_rows = j.out_rows;
            result.first_cols = j.out_cols;
          }
          free_jobs.push(&j);
          if (++done == n) {
            std::lock_guard<std::mutex> lock(error_mu);
            finished = Clock::now();
          }
        }
      } catch (...) {
        fail();
      }
    });

  follow("devmat", n, done, error_mu, error);
  for (auto& t : threads) t.join();
  result.wall_s = std::chrono::duration<double>(finished - t0).count();  // not the progress line's polling
  for (const devmat::Stream& s : streams) s.synchronize();  // no copy may still target a job's buffers
  cudaEventDestroy(start);
  if (error) std::rethrow_exception(error);
  return result;
}

// ------------------------------------------------------------------ the report
struct StageLine {
  const char* name;
  double mean_ms;
  int workers;
  const char* worker_kind;
};

/// Prints the table; returns the mean time of the GPU stages an image (ms).
double report(const Options& o, const RunResult& r, int n) {
  double decode = 0, upload = 0, gpu = 0, download = 0, encode = 0;
  std::vector<std::pair<double, double>> up_iv, gpu_iv, down_iv;
  for (const Sample& s : r.samples) {
    decode += s.decode_s;
    encode += s.encode_s;
    upload += s.t[1] - s.t[0];
    gpu += s.t[2] - s.t[1];
    download += s.t[3] - s.t[2];
    up_iv.emplace_back(s.t[0], s.t[1]);
    gpu_iv.emplace_back(s.t[1], s.t[2]);
    down_iv.emplace_back(s.t[2], s.t[3]);
  }
  const double wall = r.wall_s;
  std::printf("\ndevmat: %d images in %.3f s: %.1f images/s\n", n, wall, n / wall);
  const StageLine lines[] = {{"decode (CPU)", 1e3 * decode / n, o.decoders, "threads"},
                             {"upload (H2D)", 1e3 * upload / n, 1, "copy engine"},
                             {"GPU stages", 1e3 * gpu / n, 1, "GPU"},
                             {"download (D2H)", 1e3 * download / n, 1, "copy engine"},
                             {"encode (CPU)", 1e3 * encode / n, o.encoders, "threads"}};
  const double busy[] = {decode / (o.decoders * wall), union_length(up_iv) / wall, union_length(gpu_iv) / wall,
                         union_length(down_iv) / wall, encode / (o.encoders * wall)};
  std::printf("  %-16s %14s %16s %15s %12s\n", "stage", "mean ms/image", "workers", "capacity img/s", "busy");
  int bottleneck = 0;
  double lowest = 1e300;
  for (int k = 0; k < 5; ++k) {
    const StageLine& l = lines[k];
    const double capacity = l.mean_ms > 0 ? 1e3 * l.workers / l.mean_ms : 1e300;
    if (capacity < lowest) lowest = capacity, bottleneck = k;
    std::printf("  %-16s %14.3f %4d %-11s %15.1f %11.1f%%\n", l.name, l.mean_ms, l.workers, l.worker_kind, capacity,
                100.0 * busy[k]);
  }
  std::printf("  GPU busy fraction: %.1f%% of the wall time had GPU stages running or queued on some stream;\n"
              "  sum of the GPU stages' event times / wall time = %.3f (upload + GPU + download: %.3f)\n",
              100.0 * busy[2], gpu / wall, (upload + gpu + download) / wall);
  const bool gpu_bound = bottleneck >= 1 && bottleneck <= 3;
  std::printf("  bottleneck: %s (capacity %.1f images/s); the GPU part is %s\n", lines[bottleneck].name, lowest,
              gpu_bound ? "the bottleneck" : "not the bottleneck");
  return lines[2].mean_ms;
}

#if BATCH_HAVE_OPENCV
// ------------------------------------------------------------------ the same stages with OpenCV
struct CvResult {
  double wall_s = 0, decode_s = 0, process_s = 0, encode_s = 0;
  std::vector<std::uint8_t> first_edges;
};

CvResult run_opencv(const Options& o, const std::vector<std::string>& files, const fs::path& out_dir) {
  // One image a thread on every core; OpenCV's own threads off, so the cores are not shared twice.
  const int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cv::setNumThreads(1);
  const int n = static_cast<int>(files.size());
  CvResult r;
  std::atomic<int> next{0}, done{0};
  std::mutex mu;
  std::exception_ptr error;
  Clock::time_point finished;  // when the last image was written (under mu)
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      double dec = 0, proc = 0, enc = 0;
      std::vector<std::uint8_t> bytes;
      try {
        for (int i; (i = next++) < n;) {
          auto ta = Clock::now();
          const devmat::ImageShape shape = devmat::read_image(files[static_cast<std::size_t>(i)], 3, bytes);
          dec += seconds_since(ta);
          ta = Clock::now();
          const cv::Mat rgb(static_cast<int>(shape.rows), static_cast<int>(shape.cols), CV_8UC3, bytes.data());
          cv::Mat gray, small, blurred, edges;
          cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
          cv::resize(gray, small, cv::Size(static_cast<int>(scaled(shape.cols, o.scale)), static_cast<int>(scaled(shape.rows, o.scale))),
                     0, 0, cv::INTER_LINEAR);
          cv::blur(small, blurred, cv::Size(kBlur, kBlur));
          cv::Canny(blurred, edges, kCannyLow, kCannyHigh);
          proc += seconds_since(ta);
          ta = Clock::now();
          devmat::write_image(output_name(out_dir, files[static_cast<std::size_t>(i)]), edges.data, edges.rows, edges.cols, 1);
          enc += seconds_since(ta);
          if (i == 0) {
            std::lock_guard<std::mutex> lock(mu);
            r.first_edges.assign(edges.data, edges.data + edges.total());
          }
          if (++done == n) {
            std::lock_guard<std::mutex> lock(mu);
            finished = Clock::now();
          }
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      r.decode_s += dec;
      r.process_s += proc;
      r.encode_s += enc;
    });
  follow("OpenCV", n, done, mu, error);
  for (auto& t : pool) t.join();
  r.wall_s = std::chrono::duration<double>(finished - t0).count();
  if (error) std::rethrow_exception(error);
  std::printf("\nOpenCV %s, %d threads (one image each; decode and encode through devmat's codec, as above):\n"
              "  %d images in %.3f s: %.1f images/s\n",
              CV_VERSION, threads, n, r.wall_s, n / r.wall_s);
  std::printf("  %-34s %14s\n", "stage", "mean ms/image");
  std::printf("  %-34s %14.3f\n", "decode", 1e3 * r.decode_s / n);
  std::printf("  %-34s %14.3f\n", "gray, resize, blur, Canny (CPU)", 1e3 * r.process_s / n);
  std::printf("  %-34s %14.3f\n", "encode", 1e3 * r.encode_s / n);
  return r;
}
#endif

/// Every image again through the blocking API, one operation at a time; the number of outputs
/// that differ from it.
int verify(const Options& o, const std::vector<std::string>& files, const fs::path& out_dir) {
  int differ = 0;
  std::vector<std::uint8_t> written;
  for (const std::string& f : files) {
    const devmat::Rgb8 rgb = devmat::load_rgb(f);
    const auto gray = devmat::rgb_to_gray(rgb[0], rgb[1], rgb[2]);
    const auto small = devmat::resize(gray, scaled(gray.rows(), o.scale), scaled(gray.cols(), o.scale), devmat::Interp::linear);
    const std::vector<std::uint8_t> want = devmat::canny(devmat::box_filter(small, kBlur, kBlur), kCannyLow, kCannyHigh).to_vector();
    const devmat::ImageShape shape = devmat::read_image(output_name(out_dir, f), 1, written);
    if (shape.rows != small.rows() || shape.cols != small.cols() || written != want) {
      std::fprintf(stderr, "verify: %s differs from the blocking calls' result\n", output_name(out_dir, f).c_str());
      ++differ;
    }
  }
  std::printf("verify: %zu of %zu outputs equal the blocking calls' result bit for bit\n", files.size() - differ,
              files.size());
  return differ;
}

struct TempDir {
  fs::path path;
  bool keep = false;
  explicit TempDir(const char* prefix) {
    std::string t = (fs::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("cannot create a temporary folder in " + fs::temp_directory_path().string());
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!devmat::image_io_available()) {
    std::fprintf(stderr, "batch_pipeline: libdevmat was built without image I/O (stb_image): nothing to decode\n");
    return 1;
  }
  // Threads that wait for the GPU sleep rather than spin: the CPU's cores decode and encode.
  // (Only before the device is first used; later it is refused and the default stays.)
  if (cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) (void)cudaGetLastError();

  (void)devmat::Stream::per_thread();  // no usable device: cuda_error (exit status 77) before anything is generated
  int device = 0;
  DEVMAT_CUDA_TRY(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  DEVMAT_CUDA_TRY(cudaGetDeviceProperties(&prop, device));

  TempDir tmp("devmat-batch");
  tmp.keep = o.keep;
  fs::path in_dir = o.folder;
  if (o.folder.empty()) {
    in_dir = tmp.path / "in";
    fs::create_directories(in_dir);
    const auto tg = Clock::now();
    generate(o, in_dir, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
    std::printf("generated %d synthetic %lldx%lld RGB %s images in %s (%.1f s, not timed)\n", o.count,
                static_cast<long long>(o.width), static_cast<long long>(o.height), o.format.c_str(), in_dir.c_str(),
                seconds_since(tg));
  }
  const std::vector<std::string> files = list_images(in_dir);
  if (files.empty()) {
    std::fprintf(stderr, "batch_pipeline: no PNG, JPEG, BMP, PGM or PPM image in %s\n", in_dir.c_str());
    return 1;
  }
  const fs::path out_dir = o.out.empty() ? tmp.path / "out" : fs::path(o.out);
  fs::create_directories(out_dir);

  std::printf("%zu images from %s -> edges (x%.2f) as PNG in %s\n", files.size(), in_dir.c_str(), o.scale, out_dir.c_str());
  std::printf("GPU: %s, %d streams; CPU: %d decode threads, %d encode threads (%u cores)\n", prop.name, o.streams,
              o.decoders, o.encoders, std::thread::hardware_concurrency());
  std::printf("stages: decode, upload (pinned, async), split + gray, resize linear, blur %dx%d, canny(%g, %g), "
              "download (pinned, async), encode PNG\n",
              kBlur, kBlur, kCannyLow, kCannyHigh);

  const RunResult r = run_gpu(o, files, out_dir);
  const double gpu_ms = report(o, r, static_cast<int>(files.size()));

#if BATCH_HAVE_OPENCV
  if (o.opencv) {
    const fs::path cv_dir = tmp.path / "out_opencv";
    fs::create_directories(cv_dir);
    const CvResult c = run_opencv(o, files, cv_dir);
    const double speed = (files.size() / r.wall_s) / (files.size() / c.wall_s);
    std::printf("  devmat's pipeline / OpenCV's: %.2fx the images per second; GPU stages %.3f ms an image against "
                "OpenCV's %.3f ms of one core\n",
                speed, gpu_ms, 1e3 * c.process_s / files.size());
    if (!r.first_edges.empty() && r.first_edges.size() == c.first_edges.size()) {
      std::size_t differ = 0;
      for (std::size_t i = 0; i < r.first_edges.size(); ++i) differ += r.first_edges[i] != c.first_edges[i];
      std::printf("  edges of the first image: %zu of %zu pixels differ from OpenCV's (%.3f%%; resize and blur round "
                  "within one level of OpenCV)\n",
                  differ, r.first_edges.size(), 100.0 * differ / r.first_edges.size());
    }
  } else {
    std::printf("\nOpenCV comparison skipped (--no-opencv)\n");
  }
#else
  (void)gpu_ms;
  std::printf("\nOpenCV comparison skipped: OpenCV (core, imgproc) was not found when this example was built\n");
#endif
  const int differ = o.verify ? verify(o, files, out_dir) : 0;
  if (o.keep) std::printf("kept %s\n", tmp.path.c_str());
  return differ == 0 ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const devmat::cuda_error& e) {
    const bool no_gpu = e.code() == cudaErrorNoDevice || e.code() == cudaErrorInsufficientDriver;
    std::fprintf(stderr, "batch_pipeline: %s\n  %s\n", no_gpu ? "this example needs a CUDA device" : "CUDA failed",
                 e.what());
    return no_gpu ? 77 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_pipeline: %s\n", e.what());
    return 1;
  }
}
