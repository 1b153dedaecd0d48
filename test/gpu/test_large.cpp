// Public operations on matrices and images past 2^31 elements or 2^31 bytes: 64-bit indexing,
// and the limits that such shapes meet (cudaMemcpy2D's 2^31 - 1-byte pitch, OpenCV's 16-bit warp
// coordinates and 32-bit fixed point, int32 counts). Each case builds its input from a pattern
// computable from (row, column), so that the reference needs no second copy of the image: exact
// operations are compared pixel for pixel over the whole output, on every core; neighbourhood
// operations on a spread of rows and columns (the first and last ones, and those where the
// row-major index passes each multiple of 2^31 elements or bytes) against a reference computed
// from the pattern for those pixels, and, on the device, in windows around each such boundary
// against the same operation on a crop of the window (which the library indexes in 32 bits).
// Every case checks the free device and host memory first and skips itself (DEVMAT_SKIP) where
// the machine has too little: the largest needs 36 GB of device memory and 11 GB of host memory
// (an H200 runs them all). All are tagged [large]: scripts/gpu-check leaves them out under
// compute-sanitizer.
#include "support/canny_ref.hpp"
#include "support/util.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {

using u8 = std::uint8_t;
constexpr Index kTwo31 = Index(1) << 31;

// ------------------------------------------------------------------ resources

/// MemAvailable of /proc/meminfo in bytes (or a huge number where it cannot be read).
double host_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kb) == 1) return 1024.0 * static_cast<double>(kb);
  }
  return 1e30;
}

/// Why this machine cannot run a case that needs `device_gb` GB of device memory and `host_gb`
/// GB of host memory ("" when it can). Gives the pool's cached memory back first, so that the
/// free memory counts what earlier cases left behind.
std::string lacks(double device_gb, double host_gb) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  trim_pool(0);
  std::size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  std::ostringstream why;
  if (static_cast<double>(free_b) < device_gb * 1e9)
    why << "needs " << device_gb << " GB of device memory, " << static_cast<double>(free_b) / 1e9 << " GB free";
  const double host = host_available_bytes();
  if (host < host_gb * 1e9)
    why << (why.str().empty() ? "" : "; ") << "needs " << host_gb << " GB of host memory, " << host / 1e9
        << " GB available";
  return why.str();
}

/// Leaves the test case as skipped unless the machine has the memory (see lacks).
#define LARGE_CASE_NEEDS(device_gb, host_gb)                   \
  do {                                                         \
    const std::string why_ = lacks((device_gb), (host_gb));    \
    if (!why_.empty()) DEVMAT_SKIP("[large] case skipped: " + why_); \
  } while (false)

// ------------------------------------------------------------------ threads

unsigned workers() {
  static const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
  return n;
}

/// f(begin, end) on contiguous pieces of [0, n), one a core.
template <class F>
void parallel_for(Index n, const F& f) {
  const Index t = std::min<Index>(workers(), std::max<Index>(1, n / 65536));
  if (t <= 1) {
    if (n > 0) f(Index(0), n);
    return;
  }
  std::vector<std::thread> pool;
  for (Index i = 0; i < t; ++i) pool.emplace_back([&f, n, t, i] { f(n * i / t, n * (i + 1) / t); });
  for (auto& th : pool) th.join();
}

/// The mismatches of a comparison: how many, and the first in (row, column) order.
struct Mismatch {
  Index count = 0;
  Index r = -1, c = -1;
  double got = 0, want = 0;
  void add(Index rr, Index cc, double g, double w) {
    if (count++ == 0 || rr < r || (rr == r && cc < c)) {
      r = rr;
      c = cc;
      got = g;
      want = w;
    }
  }
  void merge(const Mismatch& o) {
    if (o.count == 0) return;
    const Index n = count;
    add(o.r, o.c, o.got, o.want);
    count = n + o.count;
  }
  std::string str() const {
    if (count == 0) return "no mismatch";
    std::ostringstream s;
    s.precision(17);
    s << count << " mismatches, the first at (" << r << ", " << c << "): got " << got << ", want " << want;
    return s.str();
  }
};

/// f(begin, end, mismatch) on pieces of [0, n) on every core; the pieces' mismatches merged.
template <class F>
Mismatch parallel_mismatches(Index n, const F& f) {
  std::mutex mu;
  Mismatch all;
  parallel_for(n, [&](Index b, Index e) {
    Mismatch m;
    f(b, e, m);
    const std::lock_guard<std::mutex> lock(mu);
    all.merge(m);
  });
  return all;
}

#define CHECK_NO_MISMATCH(what, mismatch)    \
  do {                                       \
    const Mismatch m_ = (mismatch);          \
    INFO((what) << ": " << m_.str());        \
    CHECK(m_.count == 0);                    \
  } while (false)

// ------------------------------------------------------------------ host arrays

/// n elements of T in host memory, allocated without the single-threaded zeroing of a
/// std::vector (the pages are touched on every core by whoever fills them).
template <class T>
struct HostArray {
  std::unique_ptr<T[]> p;
  Index n = 0;
  HostArray() = default;
  explicit HostArray(Index size) : p(new T[static_cast<std::size_t>(size)]), n(size) {}
  T* data() { return p.get(); }
  const T* data() const { return p.get(); }
  T& operator[](Index i) { return p[static_cast<std::size_t>(i)]; }
  const T& operator[](Index i) const { return p[static_cast<std::size_t>(i)]; }
};

/// n values f(i), filled on every core.
template <class T, class F>
HostArray<T> host_fill(Index n, const F& f) {
  HostArray<T> h(n);
  parallel_for(n, [&](Index b, Index e) {
    for (Index i = b; i < e; ++i) h[i] = f(i);
  });
  return h;
}

/// rows x cols values f(r, c), row-major, filled on every core.
template <class T, class F>
HostArray<T> host_image(Index rows, Index cols, const F& f) {
  HostArray<T> h(rows * cols);
  parallel_for(rows * cols, [&](Index b, Index e) {
    Index r = b / cols, c = b % cols;
    for (Index i = b; i < e; ++i) {
      h[i] = f(r, c);
      if (++c == cols) {
        c = 0;
        ++r;
      }
    }
  });
  return h;
}

/// The matrix f(r, c) on the device, through a host image.
template <class T, class F>
DeviceMatrix<T> device_image(Index rows, Index cols, const F& f) {
  const HostArray<T> h = host_image<T>(rows, cols, f);
  return DeviceMatrix<T>::from_host(h.data(), rows, cols);
}

/// A view's elements on the host, row-major (the pages touched on every core first).
template <class T>
HostArray<T> download(const MatrixView<const T>& v) {
  HostArray<T> h(v.size());
  parallel_for(v.size(), [&](Index b, Index e) { std::memset(static_cast<void*>(h.data() + b), 0, static_cast<std::size_t>(e - b) * sizeof(T)); });
  v.copy_to_host(h.data());
  return h;
}
template <class T>
HostArray<T> download(const DeviceMatrix<T>& m) {
  return download(m.view());
}

// ------------------------------------------------------------------ comparisons

template <class G, class W>
bool close(G got, W want, double tol) {
  if (tol == 0) return got == want;
  return std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= tol;
}

template <class T> Index size_of(const HostArray<T>& h) { return h.n; }
template <class T> Index size_of(const std::vector<T>& v) { return static_cast<Index>(v.size()); }

/// got (rows x cols, dense, row-major on the host: a HostArray or a std::vector) against
/// want(r, c) at every pixel, on every core.
template <class Got, class W>
Mismatch compare_all(const Got& got, Index rows, Index cols, const W& want, double tol = 0) {
  REQUIRE(size_of(got) == rows * cols);
  return parallel_mismatches(rows * cols, [&](Index b, Index e, Mismatch& m) {
    Index r = b / cols, c = b % cols;
    for (Index i = b; i < e; ++i) {
      const auto w = want(r, c);
      if (!close(got[i], w, tol)) m.add(r, c, static_cast<double>(got[i]), static_cast<double>(w));
      if (++c == cols) {
        c = 0;
        ++r;
      }
    }
  });
}

/// Rows and columns to check.
struct Lines {
  std::vector<Index> rows, cols;
};

/// The rows and columns of a rows x cols image of `elem`-byte elements to check: the first and
/// last three, a spread between, and those on either side of each place where the row-major
/// index passes a multiple of 2^31 elements or of 2^31 bytes (its row, and its column).
Lines pick_lines(Index rows, Index cols, std::size_t elem) {
  std::set<Index> rs, cs;
  const auto near = [](std::set<Index>& s, Index v, Index n) {
    for (Index d = -1; d <= 1; ++d)
      if (v + d >= 0 && v + d < n) s.insert(v + d);
  };
  near(rs, 1, rows);
  near(rs, rows - 2, rows);
  near(cs, 1, cols);
  near(cs, cols - 2, cols);
  for (Index i = 1; i < 12; ++i) {
    rs.insert(std::min(rows - 1, rows * i / 12 + i));
    cs.insert(std::min(cols - 1, cols * i / 12 + i));
  }
  for (const Index unit : {kTwo31 / static_cast<Index>(elem), kTwo31})
    for (Index at = unit; at < rows * cols; at += unit) {
      near(rs, at / cols, rows);
      near(cs, at % cols, cols);
    }
  return {std::vector<Index>(rs.begin(), rs.end()), std::vector<Index>(cs.begin(), cs.end())};
}

/// The rows and columns `at` of a device matrix, on the host.
template <class T>
struct LineData {
  Index rows = 0, cols = 0;
  Lines at;
  std::vector<std::vector<T>> row, col;  // at.rows[i]'s pixels, at.cols[j]'s
};

template <class T>
LineData<T> fetch_lines(const MatrixView<const T>& out, const Lines& at) {
  LineData<T> d{out.rows(), out.cols(), at, {}, {}};
  for (const Index r : at.rows) d.row.push_back(out.row(r).to_vector());
  for (const Index c : at.cols) d.col.push_back(out.col(c).to_vector());
  return d;
}
template <class T>
LineData<T> fetch_lines(const DeviceMatrix<T>& out, const Lines& at) {
  return fetch_lines(out.view(), at);
}

/// The fetched lines against want(r, c), on every core.
template <class T, class W>
Mismatch compare_lines(const LineData<T>& got, const W& want, double tol = 0) {
  const Index rows = got.rows, cols = got.cols;
  const Index n_rows = static_cast<Index>(got.at.rows.size()) * cols;
  const Index n = n_rows + static_cast<Index>(got.at.cols.size()) * rows;
  return parallel_mismatches(n, [&](Index b, Index e, Mismatch& m) {
    for (Index i = b; i < e; ++i) {
      Index r, c;
      T g;
      if (i < n_rows) {
        const auto k = static_cast<std::size_t>(i / cols);
        r = got.at.rows[k];
        c = i % cols;
        g = got.row[k][static_cast<std::size_t>(c)];
      } else {
        const auto k = static_cast<std::size_t>((i - n_rows) / rows);
        c = got.at.cols[k];
        r = (i - n_rows) % rows;
        g = got.col[k][static_cast<std::size_t>(r)];
      }
      const auto w = want(r, c);
      if (!close(g, w, tol)) m.add(r, c, static_cast<double>(g), static_cast<double>(w));
    }
  });
}

/// Windows (r0, c0, rows, cols) of about h x w pixels, clipped to the image, around each place
/// where the row-major index of a rows x cols image of `elem`-byte elements passes a multiple of
/// 2^31 elements or bytes.
std::vector<std::array<Index, 4>> boundary_windows(Index rows, Index cols, std::size_t elem, Index h, Index w) {
  std::set<std::array<Index, 4>> out;
  for (const Index unit : {kTwo31 / static_cast<Index>(elem), kTwo31})
    for (Index at = unit; at < rows * cols; at += unit) {
      const Index r = at / cols, c = at % cols;
      const Index r0 = std::clamp<Index>(r - h / 2, 0, std::max<Index>(0, rows - h));
      const Index c0 = std::clamp<Index>(c - w / 2, 0, std::max<Index>(0, cols - w));
      out.insert({r0, c0, std::min(h, rows - r0), std::min(w, cols - c0)});
    }
  return std::vector<std::array<Index, 4>>(out.begin(), out.end());
}

/// On the device: `out` = op(img) against op(img's window) alone (a crop indexed in 32 bits),
/// `margin` pixels in from the window's edges (where the crop's own borders do not reach), in
/// the windows around the 2^31 boundaries. Exact for u8, within tol for float.
template <class T, class U, class Op>
void check_crops(const char* what, const DeviceMatrix<T>& img, const DeviceMatrix<U>& out, const Op& op, Index margin,
                 double tol = 0) {
  const auto windows = boundary_windows(img.rows(), img.cols(), sizeof(T), 384, 3072);
  REQUIRE(!windows.empty());
  for (const auto& [r0, c0, h, w] : windows) {
    if (h <= 2 * margin || w <= 2 * margin) continue;
    const DeviceMatrix<U> part = op(img.block(r0, c0, h, w));
    REQUIRE(part.rows() == h);
    REQUIRE(part.cols() == w);
    const MatrixView<const U> a = out.block(r0 + margin, c0 + margin, h - 2 * margin, w - 2 * margin);
    const MatrixView<const U> b = part.block(margin, margin, h - 2 * margin, w - 2 * margin);
    std::uint64_t bad = 0;
    if constexpr (std::is_floating_point_v<U>) bad = (devmat::abs(a - b) > static_cast<U>(tol)).sum();
    else bad = (a != b).sum();
    INFO(what << ": the window (" << r0 << ", " << c0 << ") " << shape(h, w) << " against the same operation on a crop");
    CHECK(bad == 0u);
  }
}

// ------------------------------------------------------------------ patterns

inline std::uint32_t hash32(std::uint64_t a, std::uint64_t b) {
  std::uint64_t v = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
  v ^= v >> 29;
  v *= 0xBF58476D1CE4E5B9ull;
  v ^= v >> 32;
  return static_cast<std::uint32_t>(v);
}

/// The u8 test image: every grey level, neighbours apart, and a product term so that no shift
/// of the index (by rows, columns or a multiple of 256) gives the same values.
inline u8 pat(Index r, Index c) { return static_cast<u8>(r * 7 + c * 13 + ((r * c) >> 3)); }

/// Noise: a hash of (r, c).
inline u8 noise(Index r, Index c) { return static_cast<u8>(hash32(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(c))); }

/// For erosion and dilation: grey 128 with a dark spot (0..99) at one pixel in 64 and a bright
/// one (156..255) at another, so that the min and max over windows of 3 to 31 pixels a side
/// still vary from pixel to pixel.
inline u8 spots(Index r, Index c) {
  const std::uint32_t h = hash32(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(c));
  switch (h & 63u) {
    case 0: return static_cast<u8>((h >> 8) % 100);
    case 1: return static_cast<u8>(156 + (h >> 8) % 100);
    default: return 128;
  }
}

/// A float with 24 significant bits of hash: any two elements agree with probability 2^-24.
inline float fnoise(Index r, Index c) {
  return static_cast<float>(hash32(static_cast<std::uint64_t>(r) + 77, static_cast<std::uint64_t>(c)) & 0xFFFFFFu);
}

}  // namespace

namespace {

/// The sum of f(i) over [0, n) in 64 bits, on every core.
template <class F>
std::uint64_t parallel_sum(Index n, const F& f) {
  std::mutex mu;
  std::uint64_t total = 0;
  parallel_for(n, [&](Index b, Index e) {
    std::uint64_t s = 0;
    for (Index i = b; i < e; ++i) s += static_cast<std::uint64_t>(f(i));
    const std::lock_guard<std::mutex> lock(mu);
    total += s;
  });
  return total;
}

/// OpenCV's BORDER_REFLECT_101 index (... 2 1 | 0 1 2 ...) for a reach below n.
inline Index reflect101(Index i, Index n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * n - 2 - i;
  return i;
}

inline Index clamp_index(Index i, Index n) { return std::clamp<Index>(i, 0, n - 1); }

// ------------------------------------------------------------------ references at one pixel
// Each computes one output pixel of an operation from its definition (OpenCV's, which the
// library follows), reading the input through src(r, c) (the pattern itself).

/// box_filter's u8 mean over the k x k window at (r, c): borders reflected, rounded half up.
template <class Src>
u8 box_at(const Src& src, Index R, Index C, int k, Index r, Index c) {
  int s = 0;
  for (Index i = -k / 2; i <= k / 2; ++i)
    for (Index j = -k / 2; j <= k / 2; ++j) s += src(reflect101(r + i, R), reflect101(c + j, C));
  return static_cast<u8>((2 * s + k * k) / (2 * k * k));
}

/// median_blur's median of the k x k window at (r, c) (k <= 5), borders replicated.
template <class Src>
u8 median_at(const Src& src, Index R, Index C, int k, Index r, Index c) {
  std::array<u8, 25> v{};
  int n = 0;
  for (Index i = -k / 2; i <= k / 2; ++i)
    for (Index j = -k / 2; j <= k / 2; ++j) v[static_cast<std::size_t>(n++)] = src(clamp_index(r + i, R), clamp_index(c + j, C));
  std::nth_element(v.begin(), v.begin() + n / 2, v.begin() + n);
  return v[static_cast<std::size_t>(n / 2)];
}

/// min (erode) or max (dilate) of src over the k x k window at (r, c), clipped to the image.
template <class Src>
auto morph_at(const Src& src, Index R, Index C, int k, bool erode, Index r, Index c) {
  auto best = src(r, c);
  for (Index y = std::max<Index>(0, r - k / 2); y <= std::min(R - 1, r + k / 2); ++y)
    for (Index x = std::max<Index>(0, c - k / 2); x <= std::min(C - 1, c + k / 2); ++x) {
      const auto v = src(y, x);
      best = erode ? std::min(best, v) : std::max(best, v);
    }
  return best;
}

/// gaussian_blur: the library's weights (exp(-d^2 / 2 sigma^2), d = -radius..radius with
/// radius ceil(3 sigma), normalised in double, rounded to float), separable, borders
/// replicated, summed in double.
struct Gauss {
  int radius;
  std::vector<float> w;
  explicit Gauss(float sigma) : radius(static_cast<int>(std::ceil(3.0 * static_cast<double>(sigma)))) {
    std::vector<double> wd(static_cast<std::size_t>(2 * radius + 1));
    double sum = 0;
    for (int k = 0; k <= 2 * radius; ++k) {
      const double d = (k - radius) / static_cast<double>(sigma);
      wd[static_cast<std::size_t>(k)] = k == radius ? 1.0 : std::exp(-0.5 * d * d);
      sum += wd[static_cast<std::size_t>(k)];
    }
    for (const double v : wd) w.push_back(static_cast<float>(v / sum));
  }
  template <class Src>
  double at(const Src& src, Index R, Index C, Index r, Index c) const {
    double acc = 0;
    for (int i = -radius; i <= radius; ++i) {
      const Index y = clamp_index(r + i, R);
      double row = 0;
      for (int j = -radius; j <= radius; ++j)
        row += static_cast<double>(w[static_cast<std::size_t>(j + radius)]) * static_cast<double>(src(y, clamp_index(c + j, C)));
      acc += static_cast<double>(w[static_cast<std::size_t>(i + radius)]) * row;
    }
    return acc;
  }
};

/// resize of an R x C u8 image to rows x cols, one output pixel, in OpenCV's arithmetic (the
/// library's kernels spell out the same): nearest exactly; linear in its 11-bit fixed point;
/// area's weighted mean in double (the kernel sums in float: within a level).
struct ResizeRef {
  Index R, C, rows, cols;
  double scale_x, scale_y;  // 1 / (dst / src), as OpenCV
  ResizeRef(Index src_rows, Index src_cols, Index out_rows, Index out_cols)
      : R(src_rows), C(src_cols), rows(out_rows), cols(out_cols),
        scale_x(1.0 / (static_cast<double>(out_cols) / static_cast<double>(src_cols))),
        scale_y(1.0 / (static_cast<double>(out_rows) / static_cast<double>(src_rows))) {}

  static Index nearest_index(Index d, double scale, Index n) {
    return std::min(static_cast<Index>(std::floor(static_cast<double>(d) * scale)), n - 1);
  }
  template <class Src>
  u8 nearest(const Src& src, Index y, Index x) const {
    return src(nearest_index(y, scale_y, R), nearest_index(x, scale_x, C));
  }

  struct Tap {
    Index s0, s1;
    float f;
  };
  static Tap tap(Index d, double scale, Index n) {
    double t = (static_cast<double>(d) + 0.5) * scale;
    t = t - 0.5;
    float f = static_cast<float>(t);
    Index s = static_cast<Index>(std::floor(f));
    f -= static_cast<float>(s);
    if (s < 0) s = 0, f = 0.f;
    if (s >= n - 1) s = n - 1, f = 0.f;
    return Tap{s, s + 1 < n ? s + 1 : s, f};
  }
  template <class Src>
  u8 linear(const Src& src, Index y, Index x) const {
    const auto w = [](float f) { return static_cast<int>(std::nearbyint(f * 2048.f)); };
    const Tap ty = tap(y, scale_y, R), tx = tap(x, scale_x, C);
    const int a0 = w(1.f - tx.f), a1 = w(tx.f), b0 = w(1.f - ty.f), b1 = w(ty.f);
    const int h0 = src(ty.s0, tx.s0) * a0 + src(ty.s0, tx.s1) * a1;
    const int h1 = src(ty.s1, tx.s0) * a0 + src(ty.s1, tx.s1) * a1;
    const long long v = static_cast<long long>(b0) * h0 + static_cast<long long>(b1) * h1;
    return static_cast<u8>(std::clamp<long long>((v + (1 << 21)) >> 22, 0, 255));
  }

  struct Span {
    Index s1, s2;  // whole pixels s1 .. s2 - 1, partial ones s1 - 1 (w_lo) and s2 (w_hi)
    double w_lo, w_hi, inv_cell;
  };
  static Span span(Index d, double scale, Index n) {
    const double f1 = static_cast<double>(d) * scale, f2 = f1 + scale;
    const double cell = std::fmin(scale, static_cast<double>(n) - f1);
    const Index s2 = std::min(static_cast<Index>(std::floor(f2)), n - 1);
    const Index s1 = std::min(static_cast<Index>(std::ceil(f1)), s2);
    const double lo = static_cast<double>(s1) - f1;
    const double hi = std::fmin(std::fmin(f2 - static_cast<double>(s2), 1.0), cell);
    return Span{s1, s2, lo > 1e-3 ? lo / cell : 0.0, hi > 1e-3 ? hi / cell : 0.0, 1.0 / cell};
  }
  template <class F>
  static double span_sum(const Span& s, const F& px) {
    double acc = 0;
    if (s.w_lo > 0) acc += s.w_lo * px(s.s1 - 1);
    for (Index j = s.s1; j < s.s2; ++j) acc += s.inv_cell * px(j);
    if (s.w_hi > 0) acc += s.w_hi * px(s.s2);
    return acc;
  }
  template <class Src>
  u8 area(const Src& src, Index y, Index x) const {
    const Span sy = span(y, scale_y, R), sx = span(x, scale_x, C);
    const double v = span_sum(sy, [&](Index i) { return span_sum(sx, [&](Index j) { return static_cast<double>(src(i, j)); }); });
    return static_cast<u8>(std::clamp(std::nearbyint(v), 0.0, 255.0));
  }
};

/// warp_affine of src (sr x sc, row-major on the host) by a translation whose inverse reads
/// source (y - dy, x - dx) for output (y, x): outside the source, 7 (Border::constant, the
/// border value of the tests) or the nearest edge pixel.
inline u8 translated(const std::vector<u8>& src, Index sr, Index sc, Index dy, Index dx, Border border, Index y, Index x) {
  Index sy = y - dy, sx = x - dx;
  if (sy < 0 || sy >= sr || sx < 0 || sx >= sc) {
    if (border == Border::constant) return 7;
    sy = clamp_index(sy, sr);
    sx = clamp_index(sx, sc);
  }
  return src[static_cast<std::size_t>(sy * sc + sx)];
}

/// threshold of a u8 pixel with t = 100.7 (floored to 100) and maxval 200.4 (rounded to 200).
inline u8 threshold_ref(Threshold type, u8 p) {
  const bool above = p > 100;
  switch (type) {
    case Threshold::binary: return above ? 200 : 0;
    case Threshold::binary_inv: return above ? 0 : 200;
    case Threshold::trunc: return above ? 100 : p;
    case Threshold::to_zero: return above ? p : 0;
    default: return above ? 0 : p;  // to_zero_inv
  }
}

}  // namespace

// ------------------------------------------------------------------ products

TEST_CASE("matrix-vector products with k = 2146000001 (k slices counted in 64 bits)", "[large][gemm]") {
  // A (2 x k) times x (k x 1), and a (1 x k) times B (k x 2): run_gemv counted k's slices in int
  // (k + splits - 1 overflowed: splits negative, grid.y 2^32 - 1055, a cuda_error). x is 1 at
  // every 128th index and 0 elsewhere; A's first row is 1s and its second a hashed 0 or 1 of
  // j / 128 (B's columns the same): every partial sum is an integer below 2^24, so the float
  // result is exact whatever the order of the additions.
  const Index k = 2146000001;
  LARGE_CASE_NEEDS(36, 10);  // four k-float vectors at once (x, A's second row, A or B): 34.3 GB
  const auto bit = [](Index m) { return static_cast<float>(hash32(static_cast<std::uint64_t>(m), 5) >> 31); };
  const Index hits = (k - 1) / 128 + 1;  // the multiples of 128 below k
  const auto ones = static_cast<float>(parallel_sum(hits, [&](Index m) { return bit(m); }));
  REQUIRE(hits < (Index(1) << 24));
  REQUIRE(ones > 0.f);
  REQUIRE(ones < static_cast<float>(hits));
  DeviceMatrix<float> x, row1;
  {
    HostArray<float> h = host_fill<float>(k, [](Index j) { return j % 128 == 0 ? 1.f : 0.f; });
    x = DeviceMatrix<float>::from_host(h.data(), k, 1);
    parallel_for(k, [&](Index b, Index e) {
      for (Index j = b; j < e; ++j) h[j] = bit(j / 128);
    });
    row1 = DeviceMatrix<float>::from_host(h.data(), 1, k);
  }
  {
    DeviceMatrix<float> A(2, k);
    A.row(0).fill(1.f);
    A.row(1) = row1;
    const DeviceMatrix<float> y = A * x;
    REQUIRE(y.rows() == 2);
    REQUIRE(y.cols() == 1);
    const std::vector<float> v = y.to_vector();
    CHECK(v[0] == static_cast<float>(hits));
    CHECK(v[1] == ones);
  }
  {
    DeviceMatrix<float> B(k, 2);
    B.col(0).fill(1.f);
    B.col(1) = row1.reshaped(k, 1);
    const MatrixView<const float> a = x.reshaped(1, k);
    const DeviceMatrix<float> z = a * B;
    REQUIRE(z.rows() == 1);
    REQUIRE(z.cols() == 2);
    const std::vector<float> v = z.to_vector();
    CHECK(v[0] == static_cast<float>(hits));
    CHECK(v[1] == ones);
  }
}

// ------------------------------------------------------------------ copies through wide pitches

TEST_CASE("f64 rows past 2^31 bytes: downloads, dense copies, windows and vconcat", "[large][copy]") {
  // A row of 268435459 doubles is 2^31 + 24 bytes, past cudaMemcpy2D's widest pitch (2^31 - 1):
  // a view of it could not be downloaded or copied, nor stacked by vconcat.
  const Index n = 268435459;
  LARGE_CASE_NEEDS(14, 8);
  const auto val = [](Index r, Index c) { return static_cast<double>(c) * 0.5 + static_cast<double>(r) * 1e9 - 3.0; };
  const DeviceMatrix<double> A = device_image<double>(1, n, val);
  {
    const std::vector<double> v = A.view().to_vector();
    CHECK_NO_MISMATCH("A.view().to_vector()", compare_all(v, 1, n, val));
  }
  CHECK_NO_MISMATCH("A.row(0), downloaded", compare_all(download(A.row(0)), 1, n, val));
  CHECK_NO_MISMATCH("a window at column 1, downloaded",
                    compare_all(download(A.block(0, 1, 1, n - 2)), 1, n - 2, [&](Index, Index c) { return val(0, c + 1); }));
  {
    const DeviceMatrix<double> d(A.row(0));
    REQUIRE(d.cols() == n);
    CHECK_NO_MISMATCH("a dense copy of A.row(0)", compare_all(download(d), 1, n, val));
  }
  {
    const DeviceMatrix<double> d(A.block(0, 3, 1, n - 5));
    CHECK_NO_MISMATCH("a dense copy of a window at column 3",
                      compare_all(download(d), 1, n - 5, [&](Index, Index c) { return val(0, c + 3); }));
  }
  {
    auto W = DeviceMatrix<double>::zeros(1, n);
    W.block(0, 2, 1, n - 4) = A.block(0, 1, 1, n - 4);
    CHECK_NO_MISMATCH("a window written from another", compare_all(download(W), 1, n, [&](Index, Index c) {
                        return c < 2 || c >= n - 2 ? 0.0 : val(0, c - 1);
                      }));
  }
  const DeviceMatrix<double> A2 = A + 1e9;  // val(1, c)
  {
    const DeviceMatrix<double> V = vconcat(A, A2);
    REQUIRE(V.rows() == 2);
    REQUIRE(V.cols() == n);
    CHECK_NO_MISMATCH("vconcat(A, A2)", compare_all(download(V), 2, n, val));
  }
  {
    const DeviceMatrix<double> V = vconcat(A.block(0, 1, 1, n - 1), A2.block(0, 0, 1, n - 1));
    REQUIRE(V.rows() == 2);
    REQUIRE(V.cols() == n - 1);
    CHECK_NO_MISMATCH("vconcat of two windows", compare_all(download(V), 2, n - 1, [&](Index r, Index c) {
                        return val(r, c + 1 - r);
                      }));
  }
}

TEST_CASE("u8 3 x 2147483651: block copies, writes through views, column downloads", "[large][copy]") {
  // Rows 2^31 + 3 bytes apart: every window of more than one row has a pitch past cudaMemcpy2D's.
  const Index R = 3, C = 2147483651;
  LARGE_CASE_NEEDS(14, 8);
  DeviceMatrix<u8> A = device_image<u8>(R, C, pat);
  {
    const DeviceMatrix<u8> b(A.block(1, 3, 2, 5));
    CHECK_NO_MISMATCH("a dense copy of the 2x5 window at (1, 3)",
                      compare_all(b.to_vector(), 2, 5, [](Index r, Index c) { return pat(r + 1, c + 3); }));
  }
  for (const Index j : {Index(0), Index(1), Index(2147483647), Index(2147483648), C - 1}) {
    CAPTURE(j);
    CHECK_NO_MISMATCH("a column, downloaded", compare_all(A.col(j).to_vector(), R, 1, [j](Index r, Index) { return pat(r, j); }));
  }
  CHECK_NO_MISMATCH("the window at (0, 2147483640), downloaded",
                    compare_all(A.block(0, 2147483640, 3, 11).to_vector(), 3, 11,
                                [](Index r, Index c) { return pat(r, c + 2147483640); }));
  {
    const DeviceMatrix<u8> w(A.block(0, 1, 3, C - 2));  // 6.4 GB through the copy kernel
    REQUIRE(w.rows() == 3);
    REQUIRE(w.cols() == C - 2);
    CHECK_NO_MISMATCH("a dense copy of the window at (0, 1), 3 x (C - 2)",
                      compare_all(download(w), 3, C - 2, [](Index r, Index c) { return pat(r, c + 1); }));
  }
  // Writes: a 2x5 window at (1, 3), a 3x4 window near the end (past 2^32), and a 3 x 1000
  // window at (0, 100) from the 3 x 1000 window at (0, C - 2000).
  const std::vector<u8> src_a = {200, 201, 202, 203, 204, 205, 206, 207, 208, 209};
  const std::vector<u8> src_b = {30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41};
  A.block(1, 3, 2, 5) = DeviceMatrix<u8>::from_vector(src_a, 2, 5);
  A.block(0, C - 6, 3, 4) = DeviceMatrix<u8>::from_vector(src_b, 3, 4);
  A.block(0, 100, 3, 1000) = A.block(0, C - 2000, 3, 1000);
  CHECK_NO_MISMATCH("A after the write at (1, 3)", compare_all(A.block(0, 0, 3, 12).to_vector(), 3, 12, [&](Index r, Index c) {
                      return r >= 1 && c >= 3 && c < 8 ? src_a[static_cast<std::size_t>((r - 1) * 5 + c - 3)] : pat(r, c);
                    }));
  CHECK_NO_MISMATCH("A after the write at (0, C - 6)",
                    compare_all(A.block(0, C - 8, 3, 8).to_vector(), 3, 8, [&](Index r, Index c) {
                      return c >= 2 && c < 6 ? src_b[static_cast<std::size_t>(r * 4 + c - 2)] : pat(r, C - 8 + c);
                    }));
  CHECK_NO_MISMATCH("A after the copy into (0, 100)", compare_all(A.block(0, 98, 3, 1004).to_vector(), 3, 1004, [&](Index r, Index c) {
                      return c >= 2 && c < 1002 ? pat(r, C - 2000 + c - 2) : pat(r, 98 + c);
                    }));
  CHECK(A.at(2, 7) == 209);
  CHECK(A.at(2, C - 3) == 41);
  CHECK(A.at(2, C - 1) == pat(2, C - 1));
}

TEST_CASE("hconcat of u8 2 x 1200000000 matrices: rows of 2.4e9 bytes", "[large][copy]") {
  const Index R = 2, N = 1200000000;
  LARGE_CASE_NEEDS(14, 8);
  const DeviceMatrix<u8> p = device_image<u8>(R, N, pat);
  const DeviceMatrix<u8> q = device_image<u8>(R, N, noise);
  {
    const DeviceMatrix<u8> H = hconcat(p, q);
    REQUIRE(H.rows() == R);
    REQUIRE(H.cols() == 2 * N);
    CHECK_NO_MISMATCH("hconcat(p, q)", compare_all(download(H), R, 2 * N, [](Index r, Index c) {
                        return c < N ? pat(r, c) : noise(r, c - N);
                      }));
  }
  {
    // A view first: p lands 7 bytes into rows of 2^31 + ... bytes. The seams on the host, the
    // rest against p on the device.
    const DeviceMatrix<u8> H = hconcat(q.block(0, 1, 2, 7), p);
    REQUIRE(H.rows() == R);
    REQUIRE(H.cols() == N + 7);
    const auto want = [](Index r, Index c) { return c < 7 ? noise(r, c + 1) : pat(r, c - 7); };
    CHECK_NO_MISMATCH("hconcat(a 2x7 window of q, p): its start",
                      compare_all(H.block(0, 0, 2, 40).to_vector(), R, 40, want));
    CHECK_NO_MISMATCH("hconcat(a 2x7 window of q, p): its end", compare_all(H.block(0, N - 33, 2, 40).to_vector(), R, 40,
                                                                           [&](Index r, Index c) { return want(r, c + N - 33); }));
    CHECK((H.block(0, 7, 2, N) != p).sum() == 0u);
  }
}

// ------------------------------------------------------------------ warp_affine

namespace {

/// warp_affine of `src` (u8, or its f32 cast) by the translation m (forward: output = source +
/// (m[2], m[5])) into rows x cols, in every interpolation and border, against the source read
/// at (y - m[5], x - m[2]): where that is outside, the border value 7 or the nearest edge pixel.
void check_translations(const DeviceMatrix<u8>& src, const Affine& m, Index rows, Index cols) {
  const std::vector<u8> h = src.to_vector();
  const Index sr = src.rows(), sc = src.cols();
  const auto dx = static_cast<Index>(m[2]), dy = static_cast<Index>(m[5]);
  const DeviceMatrix<float> srcf = src.cast<float>();
  for (const Interp interp : {Interp::nearest, Interp::linear})
    for (const Border border : {Border::constant, Border::replicate}) {
      CAPTURE(static_cast<int>(interp), static_cast<int>(border), shape(sr, sc), m[2], m[5], shape(rows, cols));
      const auto want = [&](Index y, Index x) { return translated(h, sr, sc, dy, dx, border, y, x); };
      const DeviceMatrix<u8> out = warp_affine(src, m, rows, cols, interp, border, 7);
      REQUIRE(out.rows() == rows);
      REQUIRE(out.cols() == cols);
      CHECK_NO_MISMATCH("u8 warp_affine", compare_all(out.to_vector(), rows, cols, want));
      const DeviceMatrix<float> outf = warp_affine(srcf, m, rows, cols, interp, border, 7);
      CHECK_NO_MISMATCH("f32 warp_affine", compare_all(outf.to_vector(), rows, cols, [&](Index y, Index x) {
                          return static_cast<float>(want(y, x));
                        }));
    }
}

}  // namespace

TEST_CASE("warp_affine reads sources past 32767 pixels a side (no 16-bit source coordinates)", "[large][image][warp]") {
  // OpenCV's warpAffine keeps source coordinates in shorts; the kernel used to clamp them to 32767,
  // reading column 32767 for every source column past it. The map is forward (OpenCV's default):
  // a shift of -35000 makes output (y, x) the source's (y, x + 35000).
  LARGE_CASE_NEEDS(1, 1);
  const DeviceMatrix<u8> wide = device_image<u8>(3, 40001, noise);
  const DeviceMatrix<u8> tall = device_image<u8>(40001, 3, noise);
  for (const double shift : {35000.0, 39990.0}) {  // the second runs off the source's far edge
    check_translations(wide, Affine{1, 0, -shift, 0, 1, 0}, 3, 64);
    check_translations(tall, Affine{1, 0, 0, 0, 1, -shift}, 64, 3);
  }
}

TEST_CASE("warp_affine into 1 x 2230007 and 2230007 x 1 outputs (terms past 2^21 pixels that cancel)", "[large][image][warp]") {
  // Output x past 2^21 makes x * 1024 pass 2^31 in OpenCV's fixed point, cancelled by the shift:
  // output (0, x) is source (0, x - 2190000) for x in [2190000, 2230001), the border elsewhere.
  LARGE_CASE_NEEDS(1, 1);
  check_translations(device_image<u8>(1, 40001, noise), Affine{1, 0, 2190000, 0, 1, 0}, 1, 2230007);
  check_translations(device_image<u8>(40001, 1, noise), Affine{1, 0, 0, 0, 1, 2190000}, 2230007, 1);
}

// ------------------------------------------------------------------ transpose

TEST_CASE("transpose of u8 46349 x 46353, of a strided view of it, and of f32 32771 x 65537", "[large][transpose]") {
  LARGE_CASE_NEEDS(19, 10);
  {
    const Index R = 46349, C = 46353;
    const DeviceMatrix<u8> A = device_image<u8>(R, C, pat);
    {
      const DeviceMatrix<u8> t = A.transpose();
      REQUIRE(t.rows() == C);
      REQUIRE(t.cols() == R);
      CHECK_NO_MISMATCH("u8 transpose", compare_all(download(t), C, R, [](Index i, Index j) { return pat(j, i); }));
    }
    {
      const DeviceMatrix<u8> t = A.block(1, 2, R - 2, C - 5).transpose();
      REQUIRE(t.rows() == C - 5);
      REQUIRE(t.cols() == R - 2);
      CHECK_NO_MISMATCH("u8 transpose of the window at (1, 2)",
                        compare_all(download(t), C - 5, R - 2, [](Index i, Index j) { return pat(j + 1, i + 2); }));
    }
  }
  {
    const Index R = 32771, C = 65537;
    DeviceMatrix<float> t;
    {
      const DeviceMatrix<float> A = device_image<float>(R, C, fnoise);
      t = A.transpose();
    }
    REQUIRE(t.rows() == C);
    REQUIRE(t.cols() == R);
    CHECK_NO_MISMATCH("f32 transpose", compare_all(download(t), C, R, [](Index i, Index j) { return fnoise(j, i); }));
  }
}

TEST_CASE("transpose of f32 3 x 715827883 and back, and of f64 268435459 x 3", "[large][transpose]") {
  LARGE_CASE_NEEDS(19, 10);
  {
    const Index N = 715827883;  // 3N = 2^31 + 1 elements
    DeviceMatrix<float> t;
    {
      const DeviceMatrix<float> A = device_image<float>(3, N, fnoise);
      t = A.transpose();
    }
    REQUIRE(t.rows() == N);
    REQUIRE(t.cols() == 3);
    CHECK_NO_MISMATCH("f32 3 x N transposed", compare_all(download(t), N, 3, [](Index i, Index j) { return fnoise(j, i); }));
    const DeviceMatrix<float> back = t.transpose();
    REQUIRE(back.rows() == 3);
    REQUIRE(back.cols() == N);
    CHECK_NO_MISMATCH("f32 N x 3 transposed", compare_all(download(back), 3, N, fnoise));
  }
  {
    const Index N = 268435459;  // 6.4 GB
    const auto val = [](Index r, Index c) { return static_cast<double>(r * 3 + c); };
    DeviceMatrix<double> t;
    {
      const DeviceMatrix<double> A = device_image<double>(N, 3, val);
      t = A.transpose();
    }
    REQUIRE(t.rows() == 3);
    REQUIRE(t.cols() == N);
    CHECK_NO_MISMATCH("f64 N x 3 transposed", compare_all(download(t), 3, N, [&](Index i, Index j) { return val(j, i); }));
  }
}

// ------------------------------------------------------------------ reductions

TEST_CASE("sum, min and max of u8 and f32 46349 x 46351 and of a strided block of it", "[large][reduce]") {
  // pat squeezed into 2..253, with the extremes placed: 0 and 255 outside the block (at the first
  // and the last element), 1 and 254 inside it, past 2^31 in both the matrix's and the block's
  // row-major order: a reduction that stops short, or reads the block's rows at the wrong
  // offsets, misses them.
  const Index R = 46349, C = 46351;
  LARGE_CASE_NEEDS(13, 5);
  const Index br = 1, bc = 3, bh = R - 2, bw = C - 6;  // the block
  const Index lo_r = 46340, lo_c = 40001, hi_r = 46345, hi_c = 46000;
  REQUIRE(lo_r * C + lo_c > kTwo31);
  REQUIRE((lo_r - br) * bw + (lo_c - bc) > kTwo31);
  REQUIRE((hi_r - br) * bw + (hi_c - bc) > kTwo31);
  REQUIRE(bh * bw > kTwo31);
  const auto val = [&](Index r, Index c) -> u8 {
    if (r == 0 && c == 0) return 0;
    if (r == R - 1 && c == C - 1) return 255;
    if (r == lo_r && c == lo_c) return 1;
    if (r == hi_r && c == hi_c) return 254;
    return static_cast<u8>(2 + pat(r, c) % 252);
  };
  std::uint64_t total = 0, block_total = 0;
  DeviceMatrix<u8> A;
  {
    const HostArray<u8> h = host_image<u8>(R, C, val);
    total = parallel_sum(R * C, [&](Index i) { return h[i]; });
    block_total = parallel_sum(bh, [&](Index i) {
      std::uint64_t s = 0;
      const u8* row = h.data() + (br + i) * C + bc;
      for (Index c = 0; c < bw; ++c) s += row[c];
      return s;
    });
    A = DeviceMatrix<u8>::from_host(h.data(), R, C);
  }
  const double n = static_cast<double>(R * C);
  CHECK(A.sum() == total);
  CHECK(A.sum_async().to_vector()[0] == total);
  CHECK(A.min() == 0);
  CHECK(A.max() == 255);
  CHECK(std::fabs(A.mean() - static_cast<double>(total) / n) <= 1e-12 * static_cast<double>(total) / n);
  const MatrixView<const u8> blk = A.block(br, bc, bh, bw);
  CHECK(blk.sum() == block_total);
  CHECK(blk.min() == 1);
  CHECK(blk.max() == 254);
  CHECK(blk.min_async().to_vector()[0] == 1);

  // The same values as floats: sums of integers in double are exact, rounded once to float.
  const DeviceMatrix<float> F = A.cast<float>();
  CHECK(F.sum() == static_cast<float>(total));
  CHECK(std::fabs(F.mean() - static_cast<double>(total) / n) <= 1e-12 * static_cast<double>(total) / n);
  CHECK(F.min() == 0.f);
  CHECK(F.max() == 255.f);
  const MatrixView<const float> fblk = F.block(br, bc, bh, bw);
  CHECK(fblk.sum() == static_cast<float>(block_total));
  CHECK(std::fabs(fblk.mean() - static_cast<double>(block_total) / static_cast<double>(bh * bw)) <=
        1e-12 * static_cast<double>(block_total) / static_cast<double>(bh * bw));
  CHECK(fblk.min() == 1.f);
  CHECK(fblk.max() == 254.f);
}

TEST_CASE("row and column sums past 2^31 elements; u8 column sums past 2^32", "[large][reduce]") {
  LARGE_CASE_NEEDS(15, 8);
  {  // f32 715827883 x 3 (pat as floats): row sums exact in float; column sums in double, rounded once
    const Index R = 715827883, C = 3;
    DeviceMatrix<float> F;
    {
      const DeviceMatrix<u8> P = device_image<u8>(R, C, pat);
      F = P.cast<float>();
    }
    const DeviceMatrix<float> rs = F.row_sums();
    REQUIRE(rs.rows() == R);
    REQUIRE(rs.cols() == 1);
    CHECK_NO_MISMATCH("f32 row sums of 715827883 x 3", compare_all(download(rs), R, 1, [](Index r, Index) {
                        return static_cast<float>(pat(r, 0) + pat(r, 1) + pat(r, 2));
                      }));
    const std::vector<float> cs = F.col_sums().to_vector();
    REQUIRE(cs.size() == 3u);
    for (Index c = 0; c < C; ++c) {
      CAPTURE(c);
      CHECK(cs[static_cast<std::size_t>(c)] == static_cast<float>(parallel_sum(R, [c](Index r) { return pat(r, c); })));
    }
  }
  {  // u8 134217731 x 17 (2.28e9 elements): row and column sums in u64
    const Index R = 134217731, C = 17;
    const DeviceMatrix<u8> P = device_image<u8>(R, C, pat);
    const DeviceMatrix<std::uint64_t> rs = P.row_sums();
    REQUIRE(rs.rows() == R);
    CHECK_NO_MISMATCH("u8 row sums of 134217731 x 17", compare_all(download(rs), R, 1, [](Index r, Index) {
                        std::uint64_t s = 0;
                        for (Index c = 0; c < 17; ++c) s += pat(r, c);
                        return s;
                      }));
    const std::vector<std::uint64_t> cs = P.col_sums().to_vector();
    REQUIRE(cs.size() == 17u);
    for (Index c = 0; c < C; ++c) {
      CAPTURE(c);
      CHECK(cs[static_cast<std::size_t>(c)] == parallel_sum(R, [c](Index r) { return pat(r, c); }));
    }
  }
  {  // u8 255s, 16843013 x 257 (4.3e9 elements): each column sums past 2^32 (a 32-bit sum wraps)
    const Index R = 16843013, C = 257;
    auto M = DeviceMatrix<u8>::constant(R, C, 255);
    M.row(R - 1).fill(0);
    M.set(R - 2, 5, 7);
    const std::uint64_t col = 255ull * static_cast<std::uint64_t>(R - 1);
    REQUIRE(col > (std::uint64_t(1) << 32));
    const std::vector<std::uint64_t> cs = M.col_sums().to_vector();
    REQUIRE(cs.size() == static_cast<std::size_t>(C));
    CHECK_NO_MISMATCH("u8 column sums of 255s", compare_all(cs, 1, C, [&](Index, Index c) { return c == 5 ? col - 248 : col; }));
    CHECK(M.sum() == col * static_cast<std::uint64_t>(C) - 248);
    CHECK_NO_MISMATCH("u8 row sums of 255s", compare_all(download(M.row_sums()), R, 1, [&](Index r, Index) -> std::uint64_t {
                        return r == R - 1 ? 0 : r == R - 2 ? 255 * 256 + 7 : 255 * 257;
                      }));
  }
}

// ------------------------------------------------------------------ element-wise

TEST_CASE("cast u8 <-> f32 and element-wise expressions through strided views at 46349 x 46351", "[large][cast][expr]") {
  const Index R = 46349, C = 46351;
  LARGE_CASE_NEEDS(24, 11);
  const DeviceMatrix<u8> A = device_image<u8>(R, C, pat);
  {
    const DeviceMatrix<float> F = A.cast<float>();
    CHECK_NO_MISMATCH("u8 -> f32", compare_all(download(F), R, C, [](Index r, Index c) { return static_cast<float>(pat(r, c)); }));
    // 1.5 p - 30.25: exact in float, from -30.25 to 352.25, never a tie: rounds and saturates.
    const DeviceMatrix<float> G = F * 1.5f - 30.25f;
    const DeviceMatrix<u8> U = G.cast<u8>();
    CHECK_NO_MISMATCH("f32 -> u8", compare_all(download(U), R, C, [](Index r, Index c) {
                        return static_cast<u8>(std::clamp(std::nearbyint(1.5 * pat(r, c) - 30.25), 0.0, 255.0));
                      }));
  }
  {
    // Read through one stride, written through another: (3 p + 1) mod 256 of A's window at
    // (1, 3) into the window at (2, 1) of a matrix of 7s.
    auto D = DeviceMatrix<u8>::constant(R, C, 7);
    const Index h = R - 3, w = C - 4;
    D.block(2, 1, h, w) = A.block(1, 3, h, w) * u8(3) + u8(1);
    CHECK_NO_MISMATCH("an u8 expression between windows", compare_all(download(D), R, C, [&](Index r, Index c) -> u8 {
                        return r >= 2 && r < 2 + h && c >= 1 && c < 1 + w ? static_cast<u8>(pat(r - 1, c + 2) * 3 + 1) : 7;
                      }));
  }
  {
    const DeviceMatrix<float> E = cast<float>(A.block(1, 3, R - 2, C - 5)) * 0.5f - 3.f;
    REQUIRE(E.rows() == R - 2);
    REQUIRE(E.cols() == C - 5);
    CHECK_NO_MISMATCH("a float expression of an u8 window", compare_all(download(E), R - 2, C - 5, [](Index r, Index c) {
                        return static_cast<float>(pat(r + 1, c + 3)) * 0.5f - 3.f;
                      }));
  }
}

// ------------------------------------------------------------------ filters and neighbourhoods

TEST_CASE("gaussian_blur of an f32 65537 x 32771 image", "[large][image][filter]") {
  const Index R = 65537, C = 32771;
  LARGE_CASE_NEEDS(30, 11);
  const float sigma = 1.5f;
  const Gauss gauss(sigma);
  REQUIRE(gauss.radius == 5);
  DeviceMatrix<float> img;
  {
    const DeviceMatrix<u8> p = device_image<u8>(R, C, pat);
    img = p.cast<float>();
  }
  const DeviceMatrix<float> out = gaussian_blur(img, sigma);
  REQUIRE(out.rows() == R);
  REQUIRE(out.cols() == C);
  const auto src = [](Index r, Index c) { return static_cast<float>(pat(r, c)); };
  const auto want = [&](Index r, Index c) { return gauss.at(src, R, C, r, c); };
  CHECK_NO_MISMATCH("gaussian_blur", compare_lines(fetch_lines(out, pick_lines(R, C, sizeof(float))), want, 2e-3));
  check_crops("gaussian_blur", img, out, [&](const MatrixView<const float>& v) { return gaussian_blur(v, sigma); }, gauss.radius, 2e-4);
}

TEST_CASE("box_filter of a u8 50001 x 50003 image, 3x3 and 7x7", "[large][image][neigh]") {
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(14, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
  const Lines at = pick_lines(R, C, 1);
  for (const int k : {3, 7}) {  // the fused small kernel, then the two passes (a u16 row pass)
    CAPTURE(k);
    const Image8 out = box_filter(img, k, k);
    REQUIRE(out.rows() == R);
    REQUIRE(out.cols() == C);
    const auto want = [&](Index r, Index c) { return box_at(pat, R, C, k, r, c); };
    CHECK_NO_MISMATCH("box_filter", compare_lines(fetch_lines(out, at), want));
    check_crops("box_filter", img, out, [k](const MatrixView<const u8>& v) { return box_filter(v, k, k); }, k / 2);
  }
}

TEST_CASE("integral of a u8 46349 x 46351 image (int32 sums that wrap)", "[large][image][neigh]") {
  // The sum passes 2^31 many times over. Every pixel is checked through the identity
  // I(y+1, x+1) - I(y+1, x) - I(y, x+1) + I(y, x) = img(y, x) (mod 2^32), with row 0 and
  // column 0 zeros: together they determine I.
  const Index R = 46349, C = 46351;
  LARGE_CASE_NEEDS(13, 11);
  DeviceMatrix<std::int32_t> out;
  {
    const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
    out = integral(img);
  }
  REQUIRE(out.rows() == R + 1);
  REQUIRE(out.cols() == C + 1);
  const HostArray<std::int32_t> I = download(out);
  const Index W = C + 1;
  const auto at = [&](Index y, Index x) { return static_cast<std::uint32_t>(I[y * W + x]); };
  CHECK_NO_MISMATCH("integral's row 0", compare_all(std::vector<std::int32_t>(I.data(), I.data() + W), 1, W, [](Index, Index) { return 0; }));
  CHECK_NO_MISMATCH("integral's column 0", compare_all(host_fill<std::int32_t>(R + 1, [&](Index y) { return I[y * W]; }), R + 1, 1,
                                                       [](Index, Index) { return 0; }));
  CHECK_NO_MISMATCH("integral's differences", parallel_mismatches(R * C, [&](Index b, Index e, Mismatch& m) {
                      Index y = b / C, x = b % C;
                      for (Index i = b; i < e; ++i) {
                        const std::uint32_t d = at(y + 1, x + 1) - at(y + 1, x) - at(y, x + 1) + at(y, x);
                        if (d != pat(y, x)) m.add(y, x, d, pat(y, x));
                        if (++x == C) {
                          x = 0;
                          ++y;
                        }
                      }
                    }));
}

TEST_CASE("median_blur of a u8 50001 x 50003 image, 3x3 and 5x5", "[large][image][neigh]") {
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(10, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
  const Lines at = pick_lines(R, C, 1);
  for (const int k : {3, 5}) {
    CAPTURE(k);
    const Image8 out = median_blur(img, k);
    REQUIRE(out.rows() == R);
    REQUIRE(out.cols() == C);
    const auto want = [&](Index r, Index c) { return median_at(pat, R, C, k, r, c); };
    CHECK_NO_MISMATCH("median_blur", compare_lines(fetch_lines(out, at), want));
    check_crops("median_blur", img, out, [k](const MatrixView<const u8>& v) { return median_blur(v, k); }, k / 2);
  }
}

TEST_CASE("erode, dilate and morphology_open of a u8 50001 x 50004 image", "[large][image][morph]") {
  const Index R = 50001, C = 50004;
  LARGE_CASE_NEEDS(14, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, spots);
  const Lines at = pick_lines(R, C, 1);
  for (const int k : {3, 9, 21})
    for (const bool is_erode : {true, false}) {
      CAPTURE(k, is_erode);
      const auto op = [k, is_erode](const MatrixView<const u8>& v) { return is_erode ? erode(v, k, k) : dilate(v, k, k); };
      const Image8 out = op(img);
      REQUIRE(out.rows() == R);
      REQUIRE(out.cols() == C);
      CHECK_NO_MISMATCH("erode / dilate", compare_lines(fetch_lines(out, at), [&](Index r, Index c) {
                          return morph_at(spots, R, C, k, is_erode, r, c);
                        }));
      check_crops("erode / dilate", img, out, op, k / 2);
    }
  {
    const int k = 7;
    const Image8 out = morphology_open(img, k, k);
    // dilate(erode(img)) at (r, c): the max over the window of erosions, each over its window.
    const auto eroded = [&](Index y, Index x) { return morph_at(spots, R, C, k, true, y, x); };
    CHECK_NO_MISMATCH("morphology_open", compare_lines(fetch_lines(out, at), [&](Index r, Index c) {
                        return morph_at(eroded, R, C, k, false, r, c);
                      }));
    check_crops("morphology_open", img, out, [k](const MatrixView<const u8>& v) { return morphology_open(v, k, k); }, 2 * (k / 2));
  }
}

TEST_CASE("erode and dilate of an f32 46349 x 46351 image, 5x5 and 31x31", "[large][image][morph]") {
  const Index R = 46349, C = 46351;
  LARGE_CASE_NEEDS(30, 11);
  const auto val = [](Index r, Index c) { return static_cast<float>(spots(r, c)) * 0.5f - 20.f; };
  DeviceMatrix<float> img;
  {
    const DeviceMatrix<u8> s = device_image<u8>(R, C, spots);
    img = s.cast<float>() * 0.5f - 20.f;
  }
  const Lines at = pick_lines(R, C, sizeof(float));
  for (const int k : {5, 31})
    for (const bool is_erode : {true, false}) {
      CAPTURE(k, is_erode);
      const auto op = [k, is_erode](const MatrixView<const float>& v) { return is_erode ? erode(v, k, k) : dilate(v, k, k); };
      const DeviceMatrix<float> out = op(img);
      REQUIRE(out.rows() == R);
      REQUIRE(out.cols() == C);
      CHECK_NO_MISMATCH("f32 erode / dilate", compare_lines(fetch_lines(out, at), [&](Index r, Index c) {
                          return morph_at(val, R, C, k, is_erode, r, c);
                        }));
      check_crops("f32 erode / dilate", img, out, op, k / 2);
    }
}

// ------------------------------------------------------------------ canny

namespace {

/// An image whose Canny edges are known everywhere without running Canny on all of it: level
/// 100, with cells of 24 x 24 pixels each holding an 8x8 square of two halves (levels 100 + d1
/// and 100 + d2, d from {-40, -10, 0, 10, 40}: steps whose L1 Sobel magnitude is 4 |d|, under
/// the low threshold 20, weak, or over the high threshold 100), chosen by a hash of the cell;
/// the squares' edges are chains of their own, so each cell's edges are those of the cell alone.
/// Across the cells, two weak lines (level 110, one pixel wide) in the gaps between squares,
/// each with a strong 3x3 patch (level 220) at its start: a row through the cell row `line_cell_r`
/// and a column through the cell column `line_cell_c` (in two pieces, above and below the row),
/// whose edges are kept only through chains that run the whole image, across every tile and the
/// 2^31 boundaries. Bands of 9 pixels around the lines are checked against Canny of the band
/// alone with the thresholds (low, low), as if every chain in them reached a strong pixel;
/// `check_small` makes sure of that on a small image of the same layout.
struct CannyScene {
  static constexpr int kCell = 24, kSq0 = 6, kSqMid = 10, kSq1 = 14, kLine = 20;
  static constexpr double kLow = 20, kHigh = 100;
  Index R, C, ncr, ncc, lh, lv;  // rows, cols, full cells down and across, the line row and column
  std::vector<std::vector<u8>> table;  // each cell kind's 24x24 edges
  std::vector<u8> hband, vband;        // edges of the bands of rows [lh - 4, lh + 5) and columns [lv - 4, lv + 5)

  static int d_of(int i) { return std::array<int, 5>{-40, -10, 0, 10, 40}[static_cast<std::size_t>(i)]; }
  int kind(Index cr, Index cc) const { return static_cast<int>(hash32(static_cast<std::uint64_t>(cr), static_cast<std::uint64_t>(cc) + 9) % 25); }
  static u8 cell_pixel(int kind, Index y, Index x) {
    if (y < kSq0 || y >= kSq1 || x < kSq0 || x >= kSq1) return 100;
    return static_cast<u8>(100 + d_of(x < kSqMid ? kind / 5 : kind % 5));
  }
  bool on_hline(Index r, Index c) const { return r == lh && c >= 1 && c <= C - 2; }
  bool on_vline(Index r, Index c) const { return c == lv && r >= 1 && r <= R - 2 && std::abs(r - lh) >= 8; }
  bool on_patch(Index r, Index c) const {
    return (std::abs(r - lh) <= 1 && c <= 2) ||                               // the row's, at its left end
           (std::abs(c - lv) <= 1 && (r <= 2 || (r >= lh + 8 && r <= lh + 10)));  // the column's pieces' tops
  }
  u8 input(Index r, Index c) const {
    if (on_patch(r, c)) return 220;
    if (on_hline(r, c) || on_vline(r, c)) return 110;
    const Index cr = r / kCell, cc = c / kCell;
    if (cr >= ncr || cc >= ncc) return 100;
    return cell_pixel(kind(cr, cc), r % kCell, c % kCell);
  }
  u8 expected(Index r, Index c) const {
    if (r >= lh - 4 && r < lh + 5) return hband[static_cast<std::size_t>((r - (lh - 4)) * C + c)];
    if (c >= lv - 4 && c < lv + 5) return vband[static_cast<std::size_t>(r * 9 + c - (lv - 4))];
    const Index cr = r / kCell, cc = c / kCell;
    if (cr >= ncr || cc >= ncc) return 0;
    return table[static_cast<std::size_t>(kind(cr, cc))][static_cast<std::size_t>((r % kCell) * kCell + c % kCell)];
  }

  CannyScene(Index rows, Index cols, Index line_cell_r, Index line_cell_c)
      : R(rows), C(cols), ncr(rows / kCell), ncc(cols / kCell), lh(line_cell_r * kCell + kLine), lv(line_cell_c * kCell + kLine) {
    for (int k = 0; k < 25; ++k) {
      std::vector<u8> cell(kCell * kCell);
      for (Index y = 0; y < kCell; ++y)
        for (Index x = 0; x < kCell; ++x) cell[static_cast<std::size_t>(y * kCell + x)] = cell_pixel(k, y, x);
      table.push_back(canny_reference(cell.data(), kCell, kCell, kCell, kLow, kHigh));
    }
    std::vector<u8> band(static_cast<std::size_t>(9 * C));
    for (Index y = 0; y < 9; ++y)
      for (Index x = 0; x < C; ++x) band[static_cast<std::size_t>(y * C + x)] = input(lh - 4 + y, x);
    hband = canny_reference(band.data(), 9, C, C, kLow, kLow);
    band.assign(static_cast<std::size_t>(R * 9), 0);
    for (Index y = 0; y < R; ++y)
      for (Index x = 0; x < 9; ++x) band[static_cast<std::size_t>(y * 9 + x)] = input(y, lv - 4 + x);
    vband = canny_reference(band.data(), R, 9, 9, kLow, kLow);
  }
};

/// The scene's layout on a small image (7 x 8 cells and a remainder), against Canny of the whole.
void check_small_scene() {
  const Index R = 7 * CannyScene::kCell + 5, C = 8 * CannyScene::kCell + 3;
  const CannyScene s(R, C, 3, 5);
  std::vector<u8> img(static_cast<std::size_t>(R * C));
  for (Index r = 0; r < R; ++r)
    for (Index c = 0; c < C; ++c) img[static_cast<std::size_t>(r * C + c)] = s.input(r, c);
  const std::vector<u8> edges = canny_reference(img.data(), R, C, C, CannyScene::kLow, CannyScene::kHigh);
  CHECK_NO_MISMATCH("the Canny scene's layout on a small image", compare_all(edges, R, C, [&](Index r, Index c) { return s.expected(r, c); }));
  // It can fail: edges kept, edges dropped by the hysteresis (weak-only squares), along the lines.
  Index kept = 0, line_kept = 0, weak_dropped = 0;
  for (Index r = 0; r < R; ++r)
    for (Index c = 0; c < C; ++c) {
      kept += s.expected(r, c) != 0;
      line_kept += s.expected(r, c) != 0 && std::abs(r - s.lh) == 1 && c > 10 && c < C - 10;
    }
  for (int k = 0; k < 25; ++k) {
    const int a = std::abs(CannyScene::d_of(k / 5)), b = std::abs(CannyScene::d_of(k % 5));
    const bool weak_only = std::max(a, b) == 10 && std::abs(CannyScene::d_of(k / 5) - CannyScene::d_of(k % 5)) < 25;
    if (weak_only) weak_dropped += std::count(s.table[static_cast<std::size_t>(k)].begin(), s.table[static_cast<std::size_t>(k)].end(), 255) == 0;
  }
  CHECK(kept > 0);
  CHECK(line_kept > 0);
  CHECK(weak_dropped > 0);
}

}  // namespace

TEST_CASE("canny of a u8 50001 x 50003 image: every pixel, chains across the whole image", "[large][image][canny]") {
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(14, 6);
  check_small_scene();
  // The line row in the cell row where the row-major index passes 2^31; the column in the cell
  // column of that place (the column's lower piece lies wholly past 2^31).
  const CannyScene s(R, C, (kTwo31 / C) / CannyScene::kCell, (kTwo31 % C) / CannyScene::kCell);
  DeviceMatrix<u8> out;
  {
    const DeviceMatrix<u8> img = device_image<u8>(R, C, [&](Index r, Index c) { return s.input(r, c); });
    out = canny(img, CannyScene::kLow, CannyScene::kHigh);
  }
  REQUIRE(out.rows() == R);
  REQUIRE(out.cols() == C);
  const HostArray<u8> got = download(out);
  CHECK_NO_MISMATCH("canny", compare_all(got, R, C, [&](Index r, Index c) { return s.expected(r, c); }));
  // The lines' far ends, kept only through the chains.
  CHECK(s.expected(s.lh - 1, C - 20) == 255);
  CHECK(got[(s.lh - 1) * C + C - 20] == 255);
  Index low_end = 0;
  for (Index c = s.lv - 4; c < s.lv + 5; ++c) low_end += got[(R - 20) * C + c] == 255;
  CHECK(low_end > 0);
}

// ------------------------------------------------------------------ geometry

TEST_CASE("resize of a u8 50001 x 50003 image to 25001 x 25002: nearest, linear, area", "[large][image][resize]") {
  // Every output pixel, against the kernels' arithmetic (OpenCV's; the same numbers as the
  // kernels' functors run on the CPU): nearest exactly, linear within one grey level (the
  // documented promise; the reference is its 11-bit fixed point exactly), area within one level
  // (its weighted mean in double here, in float on the device).
  const Index R = 50001, C = 50003, r_out = 25001, c_out = 25002;
  LARGE_CASE_NEEDS(6, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
  const ResizeRef ref(R, C, r_out, c_out);
  CHECK_NO_MISMATCH("resize nearest", compare_all(download(resize(img, r_out, c_out, Interp::nearest)), r_out, c_out,
                                                  [&](Index y, Index x) { return ref.nearest(pat, y, x); }));
  CHECK_NO_MISMATCH("resize linear", compare_all(download(resize(img, r_out, c_out, Interp::linear)), r_out, c_out,
                                                 [&](Index y, Index x) { return ref.linear(pat, y, x); }, 1));
  CHECK_NO_MISMATCH("resize area", compare_all(download(resize(img, r_out, c_out, Interp::area)), r_out, c_out,
                                               [&](Index y, Index x) { return ref.area(pat, y, x); }, 1));
}

TEST_CASE("flip and rotate90 of a u8 50001 x 50003 image", "[large][image][flip][rotate]") {
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(6, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
  CHECK_NO_MISMATCH("flip vertical", compare_all(download(flip(img, FlipAxis::vertical)), R, C,
                                                 [&](Index r, Index c) { return pat(R - 1 - r, c); }));
  CHECK_NO_MISMATCH("flip horizontal", compare_all(download(flip(img, FlipAxis::horizontal)), R, C,
                                                   [&](Index r, Index c) { return pat(r, C - 1 - c); }));
  CHECK_NO_MISMATCH("flip both", compare_all(download(flip(img, FlipAxis::both)), R, C,
                                             [&](Index r, Index c) { return pat(R - 1 - r, C - 1 - c); }));
  {
    const DeviceMatrix<u8> t = rotate90(img, 1);  // counter-clockwise: out(i, j) = in(j, C - 1 - i)
    REQUIRE(t.rows() == C);
    REQUIRE(t.cols() == R);
    CHECK_NO_MISMATCH("rotate90 k = 1", compare_all(download(t), C, R, [&](Index i, Index j) { return pat(j, C - 1 - i); }));
  }
  {
    const DeviceMatrix<u8> t = rotate90(img, 3);  // clockwise: out(i, j) = in(R - 1 - j, i)
    REQUIRE(t.rows() == C);
    REQUIRE(t.cols() == R);
    CHECK_NO_MISMATCH("rotate90 k = 3", compare_all(download(t), C, R, [&](Index i, Index j) { return pat(R - 1 - j, i); }));
  }
}

// ------------------------------------------------------------------ colour

TEST_CASE("split_channels and merge_channels of a 3-channel 30001 x 30001 image (2.7e9 bytes)", "[large][image][color]") {
  const Index R = 30001, C = 30001;
  LARGE_CASE_NEEDS(10, 6);
  const DeviceMatrix<u8> rgb = device_image<u8>(R, 3 * C, pat);  // pixel (y, x)'s channel k at (y, 3x + k)
  const std::vector<DeviceMatrix<u8>> planes = split_channels(rgb, 3);
  REQUIRE(planes.size() == 3u);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    REQUIRE(planes[static_cast<std::size_t>(k)].rows() == R);
    REQUIRE(planes[static_cast<std::size_t>(k)].cols() == C);
    CHECK_NO_MISMATCH("split_channels", compare_all(download(planes[static_cast<std::size_t>(k)]), R, C,
                                                    [k](Index y, Index x) { return pat(y, 3 * x + k); }));
  }
  const DeviceMatrix<u8> merged = merge_channels({planes[0], planes[1], planes[2]});
  REQUIRE(merged.rows() == R);
  REQUIRE(merged.cols() == 3 * C);
  CHECK_NO_MISMATCH("merge_channels", compare_all(download(merged), R, 3 * C, pat));
}

TEST_CASE("rgb_to_gray and rgb_to_hsv of three u8 46349 x 46351 planes", "[large][image][color]") {
  // Per-pixel maps: the reference is the library's own result for each of the 2^24 colours, on
  // a 4096 x 4096 image (indexed in 32 bits; test_image_color checks every colour against
  // cv::cvtColor, and here gray and V, S against their definitions). The planes here are each
  // past 2^31 pixels (the 30001 x 30001 planes of the case above are not).
  const Index R = 46349, C = 46351;
  LARGE_CASE_NEEDS(17, 10);
  const auto col = [](int i) {  // plane i of the colour (y * 4096 + x) as R << 16 | G << 8 | B
    return [i](Index y, Index x) { return static_cast<u8>((y * 4096 + x) >> (8 * (2 - i))); };
  };
  std::vector<u8> gray_lut;
  std::array<std::vector<u8>, 3> hsv_lut;
  {
    const DeviceMatrix<u8> r = device_image<u8>(4096, 4096, col(0)), g = device_image<u8>(4096, 4096, col(1)),
                           b = device_image<u8>(4096, 4096, col(2));
    gray_lut = rgb_to_gray(r, g, b).to_vector();
    const Rgb8 hsv = rgb_to_hsv(r, g, b);
    for (int k = 0; k < 3; ++k) hsv_lut[static_cast<std::size_t>(k)] = hsv[static_cast<std::size_t>(k)].to_vector();
  }
  {
    Mismatch gm, vm, sm;
    for (int v = 0; v < (1 << 24); ++v) {
      const int r = v >> 16, g = (v >> 8) & 255, b = v & 255;
      const double y = 0.299 * r + 0.587 * g + 0.114 * b;
      if (std::fabs(gray_lut[static_cast<std::size_t>(v)] - y) > 1) gm.add(v, 0, gray_lut[static_cast<std::size_t>(v)], y);
      const int mx = std::max({r, g, b}), mn = std::min({r, g, b});
      if (hsv_lut[2][static_cast<std::size_t>(v)] != mx) vm.add(v, 0, hsv_lut[2][static_cast<std::size_t>(v)], mx);
      const double s = mx == 0 ? 0 : 255.0 * (mx - mn) / mx;
      if (std::fabs(hsv_lut[1][static_cast<std::size_t>(v)] - s) > 1) sm.add(v, 0, hsv_lut[1][static_cast<std::size_t>(v)], s);
    }
    CHECK_NO_MISMATCH("rgb_to_gray of every colour (within a level of the luma)", gm);
    CHECK_NO_MISMATCH("rgb_to_hsv's V of every colour", vm);
    CHECK_NO_MISMATCH("rgb_to_hsv's S of every colour (within a level)", sm);
  }
  const auto red = [](Index y, Index x) { return pat(y, x); };
  const auto green = [](Index y, Index x) { return noise(y, x); };
  const auto blue = [](Index y, Index x) { return static_cast<u8>(hash32(static_cast<std::uint64_t>(y) + 3, static_cast<std::uint64_t>(x))); };
  const auto index = [&](Index y, Index x) {
    return static_cast<std::size_t>(red(y, x)) << 16 | static_cast<std::size_t>(green(y, x)) << 8 | blue(y, x);
  };
  const DeviceMatrix<u8> r = device_image<u8>(R, C, red), g = device_image<u8>(R, C, green), b = device_image<u8>(R, C, blue);
  {
    const DeviceMatrix<u8> gray = rgb_to_gray(r, g, b);
    REQUIRE(gray.rows() == R);
    REQUIRE(gray.cols() == C);
    CHECK_NO_MISMATCH("rgb_to_gray", compare_all(download(gray), R, C, [&](Index y, Index x) { return gray_lut[index(y, x)]; }));
  }
  const Rgb8 hsv = rgb_to_hsv(r, g, b);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k);
    const std::vector<u8>& lut = hsv_lut[static_cast<std::size_t>(k)];
    CHECK_NO_MISMATCH("rgb_to_hsv", compare_all(download(hsv[static_cast<std::size_t>(k)]), R, C,
                                                [&](Index y, Index x) { return lut[index(y, x)]; }));
  }
}

// ------------------------------------------------------------------ intensity

TEST_CASE("threshold of a u8 50001 x 50003 image, dense and as a view at an odd offset", "[large][image][intensity]") {
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(8, 4);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, pat);
  for (const Threshold type : {Threshold::binary, Threshold::to_zero_inv}) {
    CAPTURE(static_cast<int>(type));
    CHECK_NO_MISMATCH("threshold", compare_all(download(threshold(img, 100.7, 200.4, type)), R, C,
                                               [&](Index r, Index c) { return threshold_ref(type, pat(r, c)); }));
  }
  const MatrixView<const u8> v = img.block(1, 3, R - 2, C - 4);
  for (const Threshold type : {Threshold::trunc, Threshold::binary_inv}) {
    CAPTURE(static_cast<int>(type));
    const DeviceMatrix<u8> out = threshold(v, 100.7, 200.4, type);
    REQUIRE(out.rows() == R - 2);
    REQUIRE(out.cols() == C - 4);
    CHECK_NO_MISMATCH("threshold of a view", compare_all(download(out), R - 2, C - 4,
                                                         [&](Index r, Index c) { return threshold_ref(type, pat(r + 1, c + 3)); }));
  }
  // histogram()'s counts are int32, as OpenCV's: past 2^31 pixels it refuses, rather than wrap.
  CHECK_THROWS_AS(histogram(img), shape_error);
}

namespace {

/// Two overlapping populations: a dark one (3 pixels in 4, levels 20..149) and a bright one
/// (100..239), so that Otsu's level and the equalisation table depend on the counts' ratios.
inline u8 two_modes(Index r, Index c) {
  const std::uint32_t h = hash32(static_cast<std::uint64_t>(r) + 11, static_cast<std::uint64_t>(c));
  return static_cast<u8>((h & 3u) != 0 ? 20 + (h >> 8) % 130 : 100 + (h >> 8) % 140);
}

/// equalize_hist's table from a histogram of `total` pixels: cv::equalizeHist's formula with
/// 64-bit sums, in the kernel's float arithmetic.
std::array<u8, 256> equalize_table(const std::array<std::uint64_t, 256>& hist, std::uint64_t total) {
  std::array<u8, 256> lut{};
  int i = 0;
  while (i < 255 && hist[static_cast<std::size_t>(i)] == 0) ++i;
  if (hist[static_cast<std::size_t>(i)] == total) {
    lut.fill(static_cast<u8>(i));
    return lut;
  }
  const float scale = 255.f / static_cast<float>(static_cast<long long>(total - hist[static_cast<std::size_t>(i)]));
  long long sum = 0;
  for (++i; i < 256; ++i) {
    sum += static_cast<long long>(hist[static_cast<std::size_t>(i)]);
    const int v = static_cast<int>(std::nearbyint(static_cast<float>(sum) * scale));
    lut[static_cast<std::size_t>(i)] = static_cast<u8>(std::clamp(v, 0, 255));
  }
  return lut;
}

/// Otsu's level from a histogram of `total` pixels: OpenCV 4's loop, in double, unfused.
int otsu_level(const std::array<std::uint64_t, 256>& hist, std::uint64_t total) {
  const double eps = 1.1920928955078125e-07;
  const double scale = 1.0 / static_cast<double>(total);
  double mu = 0;
  for (int i = 0; i < 256; ++i) {
    const double t = static_cast<double>(i) * static_cast<double>(hist[static_cast<std::size_t>(i)]);
    mu = mu + t;
  }
  mu = mu * scale;
  double mu1 = 0, q1 = 0, max_sigma = 0;
  int max_val = 0;
  for (int i = 0; i < 256; ++i) {
    const double p_i = static_cast<double>(hist[static_cast<std::size_t>(i)]) * scale;
    mu1 = mu1 * q1;
    q1 = q1 + p_i;
    const double q2 = 1.0 - q1;
    if (std::fmin(q1, q2) < eps || std::fmax(q1, q2) > 1.0 - eps) continue;
    const double ip = static_cast<double>(i) * p_i;
    mu1 = (mu1 + ip) / q1;
    const double q1mu1 = q1 * mu1;
    const double mu2 = (mu - q1mu1) / q2;
    const double d = mu1 - mu2;
    const double q12 = q1 * q2;
    const double q12d = q12 * d;
    const double sigma = q12d * d;
    if (sigma > max_sigma) {
      max_sigma = sigma;
      max_val = i;
    }
  }
  return max_val;
}

}  // namespace

TEST_CASE("equalize_hist and Otsu's threshold of a u8 50001 x 50003 image (64-bit counts)", "[large][image][intensity]") {
  // Both used to refuse 2^31 pixels (int32 counts); the image's total and the running sums of
  // its histogram pass 2^31, so counts that wrapped or stopped would change the table and level.
  const Index R = 50001, C = 50003;
  LARGE_CASE_NEEDS(8, 4);
  std::array<std::uint64_t, 256> hist{};
  {
    std::mutex mu;
    parallel_for(R, [&](Index b, Index e) {
      std::array<std::uint64_t, 256> h{};
      for (Index r = b; r < e; ++r)
        for (Index c = 0; c < C; ++c) ++h[two_modes(r, c)];
      const std::lock_guard<std::mutex> lock(mu);
      for (std::size_t k = 0; k < 256; ++k) hist[k] += h[k];
    });
  }
  const auto total = static_cast<std::uint64_t>(R * C);
  const std::array<u8, 256> lut = equalize_table(hist, total);
  const int level = otsu_level(hist, total);
  REQUIRE(hist[19] == 0);
  REQUIRE(hist[20] > 0);
  REQUIRE(level > 20);
  REQUIRE(level < 239);
  CAPTURE(level);
  const DeviceMatrix<u8> img = device_image<u8>(R, C, two_modes);
  CHECK(otsu_threshold(img) == static_cast<double>(level));
  CHECK_NO_MISMATCH("threshold with Threshold::otsu", compare_all(download(threshold(img, 0, 255, Threshold::otsu)), R, C,
                                                                  [&](Index r, Index c) -> u8 { return two_modes(r, c) > level ? 255 : 0; }));
  CHECK_NO_MISMATCH("equalize_hist", compare_all(download(equalize_hist(img)), R, C,
                                                 [&](Index r, Index c) { return lut[two_modes(r, c)]; }));
}

TEST_CASE("equalize_hist and Otsu of a strided u8 view with 2^31 + 18435456 zeros a row", "[large][image][intensity]") {
  // The histogram of a strided image gave a block a whole row, whose int counts wrapped where a
  // row held 2^31 pixels of one level. Here two rows of 2^31 + 2^28 pixels (a view 8 columns into
  // a matrix 16 wider): 1.5e8 pixels of 200 and 1e8 of 60 (across column 2^31) a row, zeros
  // elsewhere; Otsu's level is 60 and the table maps 60 to 102.
  const Index cols = kTwo31 + (Index(1) << 28), W = cols + 16;
  const Index n200 = 150000000, n60 = 100000000;
  LARGE_CASE_NEEDS(11, 6);
  auto M = DeviceMatrix<u8>::zeros(2, W);
  M.block(0, 100, 2, n200).fill(200);
  M.block(0, kTwo31 - n60 / 2, 2, n60).fill(60);
  const auto value = [&](Index, Index c) -> u8 {  // M(r, c)
    if (c >= 100 && c < 100 + n200) return 200;
    if (c >= kTwo31 - n60 / 2 && c < kTwo31 + n60 / 2) return 60;
    return 0;
  };
  const MatrixView<const u8> v = M.view().block(0, 8, 2, cols);
  REQUIRE(!v.contiguous());
  std::array<std::uint64_t, 256> hist{};
  hist[200] = static_cast<std::uint64_t>(2 * n200);
  hist[60] = static_cast<std::uint64_t>(2 * n60);
  hist[0] = static_cast<std::uint64_t>(2 * (cols - n200 - n60));
  REQUIRE(cols - n200 - n60 > kTwo31);  // zeros a row
  const auto total = static_cast<std::uint64_t>(2 * cols);
  const std::array<u8, 256> lut = equalize_table(hist, total);
  const int level = otsu_level(hist, total);
  CAPTURE(level, +lut[60], +lut[200]);
  REQUIRE(level == 60);
  REQUIRE(lut[60] == 102);
  REQUIRE(lut[200] == 255);
  CHECK(otsu_threshold(v) == static_cast<double>(level));
  {
    const DeviceMatrix<u8> out = equalize_hist(v);
    REQUIRE(out.rows() == 2);
    REQUIRE(out.cols() == cols);
    CHECK_NO_MISMATCH("equalize_hist of the view", compare_all(download(out), 2, cols, [&](Index r, Index c) {
                        return lut[value(r, c + 8)];
                      }));
  }
  CHECK_NO_MISMATCH("threshold of the view with Threshold::otsu",
                    compare_all(download(threshold(v, 0, 255, Threshold::otsu)), 2, cols,
                                [&](Index r, Index c) -> u8 { return value(r, c + 8) > level ? 255 : 0; }));
}

TEST_CASE("an image of more tile rows than the tiled kernels count is a shape_error", "[large][image][neigh]") {
  // A 68719476737 x 1 view (2^32 + 1 tiles of the u8 3x3 box filter's 16 rows) over a small
  // allocation: refused before any pixel is read (its output, 69 GB, is allocated first). The
  // kernels count tile rows in 32 bits; past 2^32 - 65535 of them rows went unwritten.
  LARGE_CASE_NEEDS(70, 1);
  const DeviceMatrix<u8> small(4, 4);
  const MatrixView<const u8> tall = wrap(small.data(), (Index(1) << 36) + 1, Index(1), Index(1), small.stream());
  CHECK_THROWS_AS(box_filter(tall, 3, 3), shape_error);
}
