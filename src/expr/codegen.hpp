// The CUDA source of the kernel(s) that run a lowered expression (expr/program.hpp) one way: the
// program's leaves, scalars and operations written out as straight-line code over the
// operation functions of kernels/expr_ops.cuh, plus an extern "C" kernel that hands them to one
// of the bodies of kernels/expr.cuh. Plain C++; the engine (expr/engine.cpp) compiles the text
// with NVRTC, the host tests compile it with NVRTC (and with g++ on the CPU).
#pragma once

#include "expr/program.hpp"

#include <cstdint>
#include <string>

namespace devmat::detail {

/// Which body a kernel runs.
enum class KernelKind : std::uint8_t {
  elementwise_flat,  // out = expression; contiguous, 16-byte aligned operands
  elementwise_2d,    // out = expression; strides, broadcasts, any alignment
  reduce_sum,        // sum and mean
  reduce_min,
  reduce_max,
  row_sums,
  col_sums,
  arg_min,
  arg_max,
};

/// Everything besides the program that a generated kernel depends on.
struct KernelSpec {
  KernelKind kind = KernelKind::elementwise_flat;
  bool flat = false;       // reductions and arg: every leaf contiguous and aligned (else 2D)
  bool vec = false;        // 2D paths: every row aligned to the vectors; element-wise 2D without: the slot path
  std::uint8_t min_blocks = 0;  // reductions: __launch_bounds__'s blocks per SM (0: none)
  /// The engine's, not the generator's: when ptxas spills registers under min_blocks, build
  /// with min_blocks / 2, then with no bound (expr/engine.cpp).
  bool relax_min_blocks = false;
  bool outline = false;    // the expression as one out-of-line function instead of inlined copies
  /// elementwise_flat: elements per vector unit, one unit a thread, in a kernel with only that
  /// loop (a small matrix: elementwise_vector(p) by default, plan_elementwise's small_vector
  /// when set); 0: elementwise_vector(p) and its unroll, units of a thread (a large matrix).
  /// Each kernel holds one of the loops: the other's copies of the expression would double
  /// what NVRTC compiles on a first evaluation.
  std::uint8_t vector = 0;
  /// elementwise_flat: the element count is not a multiple of the unit, so the kernel holds the
  /// tail's code (one more copy of the expression); without it, it must not run such a count.
  bool tail = false;
  /// elementwise_flat with vector 0: units a thread (0: elementwise_unroll(p); plan_elementwise's
  /// flat_units when set).
  std::uint8_t units = 0;
  bool operator==(const KernelSpec& o) const noexcept {
    return kind == o.kind && flat == o.flat && vec == o.vec && min_blocks == o.min_blocks &&
           relax_min_blocks == o.relax_min_blocks && outline == o.outline && vector == o.vector && tail == o.tail &&
           units == o.units;
  }
};

/// Names of the generated kernels.
inline constexpr const char* kExprKernelName = "devmat_expr_k";
inline constexpr const char* kExprFinalKernelName = "devmat_expr_fin";  // arg min / max, pass 2

/// Elements per vector unit of the element-wise paths: 16 bytes of the widest type among the
/// result and the leaves (narrower leaves load narrower vectors).
int elementwise_vector(const Program& p);
/// Units per thread of the flat element-wise path: all their loads are in flight at once
/// (4; 1 for 16-element vectors, bytes, which need registers to unpack), 1 for expressions with
/// transcendental functions, whose inlined copies would multiply compile time for a
/// compute-bound kernel.
int elementwise_unroll(const Program& p);
/// Units per thread of the 2D element-wise paths (the vector path's J, the slot path's U).
inline constexpr int kExpr2dUnroll = 2;
/// Whether the program calls a transcendental function (exp, log, pow, sin, ...).
bool has_transcendental(const Program& p);

/// The kernel source of `p` as `spec` says. Throws std::logic_error on a malformed program
/// (operand types that do not fit an operation), before any compiler sees it.
std::string generate_source(const Program& p, const KernelSpec& spec);

/// "float", "std::int32_t", ...: the C++ name of an element type in generated code.
const char* dtype_cxx(DType t);

}  // namespace devmat::detail
