// How the engine runs a program, decided on the host before anything launches: the kernel
// variant (path, vectors), the grid, the parameter block, the partials and the second pass.
// Plain C++ with no CUDA call, so the CPU emulation test (test/test_expr_emulation.cpp) runs the
// very plans the engine (expr/engine.cpp) launches.
#pragma once

#include "dispatch/reduce_parts.hpp"
#include "expr/codegen.hpp"
#include "expr/program.hpp"
#include "kernels/expr_params.hpp"

#include <cstddef>
#include <vector>

namespace devmat::detail {

inline constexpr int kExprBlock = 256;  // threads of every expression kernel (kernels/expr.cuh)

struct LaunchShape {
  unsigned gx = 1, gy = 1;
  unsigned bx = kExprBlock, by = 1;
};

/// What follows the generated kernel: nothing, or a precompiled pass over its partials.
enum class SecondPass { none, reduce, row_chunks, col_chunks, arg };

struct Plan {
  KernelSpec spec;
  LaunchShape shape;
  /// The kernel's head, but for its output: the caller sets h.out (and h.out2) to the result,
  /// or to the partials when partial_bytes > 0.
  ExprHead head{};
  std::size_t partial_bytes = 0;  // scratch for block partials; 0: the kernel writes the result
  std::size_t index_offset = 0;   // arg: where the partial indices start in that scratch
  SecondPass second = SecondPass::none;
  ReduceOp op = ReduceOp::sum;  // reduce: which reduction (the second pass's final step)
  Index count = 0;   // reduce, arg: partials; row_chunks: rows; col_chunks: columns
  Index chunks = 0;  // row_chunks, col_chunks
  std::size_t zero_bytes = 0;  // > 0: no kernel at all, the result is that many zero bytes
  bool empty = false;          // nothing to do
};

/// out = program over a rows x cols window (row stride ld_out): the flat path when the output
/// and every leaf are contiguous and 16-byte aligned (1 x 1 leaves allowed), else the 2D
/// vector path where every row start is aligned, else the 2D slot path (any strides and
/// offsets; kernels/expr.cuh).
/// sms: the device's SMs (the flat path takes one unit a thread where its full unroll would
/// not give 2 blocks an SM, in a kernel of its own with only the one-unit loop; 0 keeps the
/// full unroll).
/// small_vector: where the flat path takes one unit a thread, units of this many elements (a
/// power of two up to elementwise_vector(p): more threads, each with less to do) in that
/// kernel (KernelSpec::vector); 0, or anything else, keeps the default width,
/// elementwise_vector(p).
/// flat_units: units a thread of the flat path's full unroll (1 .. 8; KernelSpec::units); 0, or
/// anything else, keeps elementwise_unroll(p).
Plan plan_elementwise(const Program& p, const void* out, Index ld_out, int sms, int small_vector = 0,
                      int flat_units = 0);
/// sum, mean, min, max: launch_reduce's grid, min(ceil(n / (256 * 4 * V)), cap) with `cap` the
/// resident blocks of its first pass; a second pass (launch_reduce's) when the grid is not 1.
/// min_blocks: the fused kernel's __launch_bounds__ blocks per SM.
Plan plan_reduce(const Program& p, ReduceOp op, long long cap, int min_blocks);
Plan plan_row_sums(const Program& p, int sm_count);
Plan plan_col_sums(const Program& p, int sm_count);
Plan plan_arg(const Program& p, bool max, int sm_count);

/// The kernel's parameter block (kernels/expr_params.hpp): the head, the leaves, the scalars.
class ParamBlock {
 public:
  ParamBlock(const Program& p, const ExprHead& head);
  ParamBlock(const ParamBlock&) = delete;
  ParamBlock& operator=(const ParamBlock&) = delete;
  void* data() noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  alignas(16) unsigned char small_[1024];
  std::vector<unsigned long long> big_;
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

/// sum_t of an element type.
inline DType sum_dtype(DType t) { return t == DType::i32 ? DType::i64 : t == DType::u8 ? DType::u64 : t; }

}  // namespace devmat::detail
