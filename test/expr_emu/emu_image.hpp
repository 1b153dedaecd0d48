// What the image and transpose kernels use beyond emu_cuda.hpp's intrinsics, for the host tests
// that run them on the CPU (test_image*_emulation.cpp, test_transpose_emulation.cpp), and the
// random engine those tests draw their inputs from (seeded afresh each run). Include after
// emu_cuda.hpp and before the kernel headers.
#pragma once

#include <cmath>
#include <cstring>
#include <random>

#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
inline int __float2int_rn(float v) { return static_cast<int>(std::nearbyint(v)); }
inline int __double2int_rn(double v) { return static_cast<int>(std::nearbyint(v)); }
inline float __int_as_float(int v) {
  float f;
  std::memcpy(&f, &v, sizeof f);
  return f;
}
/// PRMT with selectors 0..7 per nibble (the kernels use no sign-replicating modes).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long v = static_cast<unsigned long long>(y) << 32 | x;
  unsigned r = 0;
  for (int b = 0; b < 4; ++b) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * b)) & 7u))) & 0xffu) << (8 * b);
  return r;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
/// A block's threads are host threads: atomic as on the GPU.
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }

namespace emu {
/// The emulation tests' random engine, seeded from std::random_device once per process.
inline std::mt19937& rng() {
  static std::mt19937 g(std::random_device{}());
  return g;
}
}  // namespace emu
