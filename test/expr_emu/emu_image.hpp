// What the image and transpose kernels use beyond emu_cuda.hpp's intrinsics, for the host tests
// that run them on the CPU (test_image*_emulation.cpp, test_transpose_emulation.cpp), and the
// random engine those tests draw their inputs from (seeded afresh each run), with their input
// images at odd offsets and poisoned outputs (Image, Output). Include after
// emu_cuda.hpp and before the kernel headers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

inline int __float2int_rn(float v) { return static_cast<int>(std::nearbyint(v)); }
inline int __double2int_rn(double v) { return static_cast<int>(std::nearbyint(v)); }
inline long long __double2ll_rn(double v) { return std::llrint(v); }
inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
/// A block's threads are host threads: atomic as on the GPU.
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

namespace emu {
/// The emulation tests' random engine, seeded from std::random_device once per process.
inline std::mt19937& rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}

/// An r x c image of random values in [lo, hi] (integers for integer T) at (row 1, column 3) of an
/// (r + 3) x (c + 7) buffer (an odd offset and stride), or dense (`offset` false).
template <class T>
struct Image {
  std::ptrdiff_t rows, cols, ld, first;
  std::vector<T> buf;
  Image(std::ptrdiff_t r, std::ptrdiff_t c, bool offset, double lo, double hi)
      : rows(r), cols(c), ld(offset ? c + 7 : c), first(offset ? ld + 3 : 0),
        buf(static_cast<std::size_t>(offset ? (r + 3) * (c + 7) : r * c)) {
    if constexpr (std::is_floating_point_v<T>) {
      std::uniform_real_distribution<T> dist(static_cast<T>(lo), static_cast<T>(hi));
      for (T& v : buf) v = dist(rng());
    } else {
      std::uniform_int_distribution<int> dist(static_cast<int>(lo), static_cast<int>(hi));
      for (T& v : buf) v = static_cast<T>(dist(rng()));
    }
  }
  const T* data() const { return buf.data() + first; }
  T at(std::ptrdiff_t y, std::ptrdiff_t x) const { return data()[y * ld + x]; }
};

/// An r x c output at (row 1, column 2) of an (r + 2) x (c + 5) buffer filled with `poison`,
/// or dense (`padded` false).
template <class T>
struct Output {
  std::ptrdiff_t rows, cols, ld, y0, x0;
  T poison;
  std::vector<T> buf;
  Output(std::ptrdiff_t r, std::ptrdiff_t c, T p, bool padded = true)
      : rows(r), cols(c), ld(padded ? c + 5 : c), y0(padded), x0(padded ? 2 : 0), poison(p),
        buf(static_cast<std::size_t>(padded ? (r + 2) * (c + 5) : r * c), p) {}
  T* data() { return buf.data() + y0 * ld + x0; }
  T at(std::ptrdiff_t y, std::ptrdiff_t x) const { return buf[(y + y0) * ld + x + x0]; }
  /// Elements of the margin that are no longer the poison, compared by bits (NaN != NaN).
  std::ptrdiff_t margin_changed() const {
    std::ptrdiff_t n = 0;
    for (std::ptrdiff_t y = 0; y < rows + 2 * y0; ++y)
      for (std::ptrdiff_t x = 0; x < ld; ++x) {
        const bool inside = y >= y0 && y < rows + y0 && x >= x0 && x < cols + x0;
        if (!inside) n += std::memcmp(&buf[y * ld + x], &poison, sizeof(T)) != 0;
      }
    return n;
  }
};

}  // namespace emu
