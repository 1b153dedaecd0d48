// The parameter block of the fused expression kernels (generated at run time, src/expr/): the
// layout that the host (src/expr/engine.cpp) fills and the generated kernel reads as one
// __grid_constant__ struct. Plain C++, read by the host compiler and by NVRTC alike.
//
// A generated kernel's parameter is
//   struct Params { ExprHead h; ExprLeaf leaf[NL]; unsigned long long scalar[NS]; };
// with NL, NS >= 1 (the program's leaves and scalars, or one unused entry), so the host writes
// the head at 0, leaf k at kExprHeadBytes + 16 k and scalar j after the leaves
// (expr_params_bytes).
#pragma once

#include <cstddef>

namespace devmat::detail {

/// What every generated kernel reads, whatever its path.
struct ExprHead {
  void* out;            // element-wise: the output window; reductions: the result or block partials
  void* out2;           // arg reductions: the partials' indices
  std::ptrdiff_t ld_out;  // element-wise: the output's row stride, in elements
  std::ptrdiff_t rows, cols;
  std::ptrdiff_t n;       // rows * cols
  std::ptrdiff_t chunk;   // row and column sums: columns (rows) per chunk; 2D slot path: slots per row
  std::ptrdiff_t chunks;  // row and column sums: chunks per row (column)
  double count;           // mean: the element count, as the unfused mean divides by it
  int mode;               // reductions: an ExprMode
  int team;               // row sums: lanes per row (1..32), or 0 for a block per (row, chunk)
  int units;              // flat element-wise path: units a thread takes per pass, 1..U (see expr_flat_body)
};

/// A leaf: element (r, c) of a leaf that is not broadcast is data[r * rs + c]; the generated
/// code knows which leaves are broadcast and reads them without the stride or the column.
struct ExprLeaf {
  const void* data;
  std::ptrdiff_t rs;
};

/// What a reduction's first pass writes.
enum ExprMode : int {
  kExprPartials = 0,  // one accumulator (or value and index) per block, at out[blockIdx.x]
  kExprFinal = 1,     // the result itself (one block): the sum in its result type, min or max, arg index
  kExprMean = 2,      // sum / count in double (one block)
};

/// The 2D slot path (kernels/expr.cuh, expr_slots_body): units of a warp's run; lane 31 takes
/// none (it loads for lane 30). The plan's grid and the kernel share it.
inline constexpr int kExprSlotLanes = 31;

inline constexpr std::size_t kExprHeadBytes = sizeof(ExprHead);
static_assert(sizeof(ExprHead) == 88 && sizeof(ExprLeaf) == 16, "ExprHead/ExprLeaf: the layout NVRTC sees");

/// Bytes of the parameter block of a program with `leaves` leaves and `scalars` scalars.
constexpr std::size_t expr_params_bytes(std::size_t leaves, std::size_t scalars) {
  return kExprHeadBytes + sizeof(ExprLeaf) * (leaves ? leaves : 1) + 8 * (scalars ? scalars : 1);
}

}  // namespace devmat::detail
