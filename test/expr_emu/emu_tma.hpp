// The Hopper copy engine on the CPU, for the emulation of kernels that use kernels/tma.cuh's
// operations on generic pointers (include before any kernel header): tensor maps (what
// encode_tensor_map_2d would encode, kept in the CUtensorMap's bytes), mbarriers (a phase, the
// arrivals still pending and the transaction bytes still expected, in a table beside the
// barrier's 8 bytes), and 2-D TMA boxes: a load copies the box now (zeros outside the map's
// extent, each element read checked by emu::check_exact, the 128-byte swizzle applied) and
// completes its bytes on the barrier; a store writes the box's elements inside the extent. The
// bulk groups and proxy fences have nothing to wait for: every copy is done when issued.
#pragma once

#include "emu_cuda.hpp"

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

inline int __popc(unsigned v) { return __builtin_popcount(v); }

namespace emu {

/// What a CUtensorMap holds in the emulation.
struct TmaMap {
  const unsigned char* base;
  std::uint64_t dim0, dim1, stride1;
  std::uint32_t box0, box1;
  int elem;     // bytes of an element
  int swizzle;  // 0 or 128 (bytes)
};
static_assert(sizeof(TmaMap) <= sizeof(CUtensorMap), "an emulated map fits a CUtensorMap");

inline const TmaMap& tma_map(const CUtensorMap* m) { return *reinterpret_cast<const TmaMap*>(m); }

struct MbarState {
  unsigned phase = 0, count = 0, pending = 0;
  long long tx = 0;
};
inline std::mutex g_mbar_m;
inline std::map<const void*, MbarState> g_mbar;

inline void mbar_complete_if_done(MbarState& s) {
  if (s.pending == 0 && s.tx == 0) {
    ++s.phase;
    s.pending = s.count;
  }
}

/// Byte offset of byte `x` of row `r` of a box with rows of `row_bytes` (swizzle: 128 or 0).
inline std::size_t tma_box_offset(const TmaMap& m, std::uint32_t r, std::uint32_t x) {
  const std::size_t row_bytes = std::size_t(m.box0) * m.elem;
  if (m.swizzle == 0) return r * row_bytes + x;
  if (row_bytes > 128) {
    std::fprintf(stderr, "emulation: a 128-byte-swizzled box row of %zu bytes\n", row_bytes);
    std::abort();
  }
  return r * 128 + (((x >> 4) ^ (r & 7)) << 4) + (x & 15);
}

}  // namespace emu

namespace devmat::detail {

/// The emulation's encoder: records the map (the same checks the driver makes on base and stride).
inline void encode_tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, const void* base, cuuint64_t dim0,
                                 cuuint64_t dim1, cuuint64_t stride1, cuuint32_t box0, cuuint32_t box1,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, const char* what) {
  const int elem = type == CU_TENSOR_MAP_DATA_TYPE_UINT8    ? 1
                   : type == CU_TENSOR_MAP_DATA_TYPE_UINT16 ? 2
                   : type == CU_TENSOR_MAP_DATA_TYPE_UINT32 ? 4
                                                            : 8;
  const bool ok = reinterpret_cast<std::uintptr_t>(base) % 16 == 0 && stride1 % 16 == 0 && dim0 >= 1 && dim1 >= 1 &&
                  dim0 <= (cuuint64_t(1) << 32) && dim1 <= (cuuint64_t(1) << 32) && box0 >= 1 && box0 <= 256 &&
                  box1 >= 1 && box1 <= 256 && (box0 * elem) % 16 == 0 &&
                  (swizzle != CU_TENSOR_MAP_SWIZZLE_128B || box0 * elem <= 128);
  if (!ok) {
    std::fprintf(stderr, "emulation: %s: a tensor map the driver would refuse\n", what);
    std::abort();
  }
  std::memset(map, 0, sizeof(*map));
  emu::TmaMap m{static_cast<const unsigned char*>(base), dim0, dim1, stride1, box0, box1, elem,
                swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128 : 0};
  std::memcpy(map, &m, sizeof(m));
}

inline void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  const std::lock_guard<std::mutex> lock(emu::g_mbar_m);
  emu::g_mbar[bar] = emu::MbarState{0, count, count, 0};
}
inline void mbar_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  const std::lock_guard<std::mutex> lock(emu::g_mbar_m);
  emu::MbarState& s = emu::g_mbar.at(bar);
  s.tx += bytes;
  --s.pending;
  emu::mbar_complete_if_done(s);
}
inline void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  for (long polls = 0;; ++polls) {
    {
      const std::lock_guard<std::mutex> lock(emu::g_mbar_m);
      if ((emu::g_mbar.at(bar).phase & 1u) != parity) return;
    }
    if (polls > 50000000) {
      std::fprintf(stderr, "emulation: an mbarrier wait that never ends\n");
      std::abort();
    }
    std::this_thread::yield();
  }
}
inline void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c0, int c1) {
  const emu::TmaMap& m = emu::tma_map(map);
  auto* d = static_cast<unsigned char*>(dst);
  for (std::uint32_t r = 0; r < m.box1; ++r)
    for (std::uint32_t x = 0; x < m.box0; ++x) {
      const long long gc = static_cast<long long>(c0) + x, gr = static_cast<long long>(c1) + r;
      unsigned char* to = d + emu::tma_box_offset(m, r, x * m.elem);
      if (gc < 0 || gr < 0 || gc >= static_cast<long long>(m.dim0) || gr >= static_cast<long long>(m.dim1)) {
        std::memset(to, 0, m.elem);
        continue;
      }
      const unsigned char* from = m.base + gr * m.stride1 + gc * m.elem;
      emu::check_exact(from, m.elem);
      std::memcpy(to, from, m.elem);
    }
  const std::lock_guard<std::mutex> lock(emu::g_mbar_m);
  emu::MbarState& s = emu::g_mbar.at(bar);
  s.tx -= static_cast<long long>(m.box0) * m.box1 * m.elem;  // the whole box, zero-filled parts included
  emu::mbar_complete_if_done(s);
}
inline void tma_store_2d(const CUtensorMap* map, const void* src, int c0, int c1) {
  const emu::TmaMap& m = emu::tma_map(map);
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::uint32_t r = 0; r < m.box1; ++r)
    for (std::uint32_t x = 0; x < m.box0; ++x) {
      const long long gc = static_cast<long long>(c0) + x, gr = static_cast<long long>(c1) + r;
      if (gc < 0 || gr < 0 || gc >= static_cast<long long>(m.dim0) || gr >= static_cast<long long>(m.dim1)) continue;
      std::memcpy(const_cast<unsigned char*>(m.base) + gr * m.stride1 + gc * m.elem, s + emu::tma_box_offset(m, r, x * m.elem),
                  m.elem);
    }
}

}  // namespace devmat::detail
