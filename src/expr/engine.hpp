// The execution engine of fused expressions: runs a lowered program (expr/program.hpp) as one
// kernel generated for its structure (expr/codegen.hpp), compiled with NVRTC on first use
// (expr/jit.hpp) and cached in memory and on disk. Plain C++.
//
// Environment:
//   DEVMAT_CACHE_DIR=<dir>   the on-disk kernel cache (default $XDG_CACHE_HOME/devmat, else
//                            ~/.cache/devmat); DEVMAT_CACHE_DIR=off disables it.
//   DEVMAT_EXPR_VERBOSE=1    prints each compilation (key, milliseconds) and each disk-cache hit
//                            to stderr; 2 also every in-memory hit.
//   DEVMAT_EXPR_TRACE=1      prints, for every kernel built, where its time went: NVRTC's set-up,
//                            code generation, the disk cache, NVRTC's create / compile / image,
//                            the disk cache write, the module load (milliseconds, to stderr).
//   DEVMAT_EXPR_REDUCE_MINBLOCKS=<n>  the fused reductions' __launch_bounds__ minimum blocks per
//                            SM (default: the unfused first pass's residency, so that the
//                            fused grid, which must be the unfused one, runs in one wave; 0:
//                            no bound). For measuring; the result bits do not depend on it.
#pragma once

#include "expr/program.hpp"

#include <devmat/stream.hpp>

namespace devmat::detail {

/// out(r, c) = value of the program at (r, c) for r < p.rows, c < p.cols; out has element type
/// p.out_type and row stride ld_out elements. Runs on `stream` (the caller has already ordered
/// the stream after the operands' pending work and handled aliasing; out may be exactly the
/// window of one of the leaves: each element is then read and written by the same thread).
/// Compiles the program's kernel with NVRTC on first use and caches it in memory and on disk.
/// Thread-safe. Errors: NVRTC failure -> cuda_error (cudaErrorInvalidSource) with the log and
/// the generated source; CUDA errors -> cuda_error.
void run_elementwise(const Program& p, void* out, Index ld_out, const Stream& stream);

enum class ReduceKind { sum, min, max, mean, row_sums, col_sums };

/// Fused reductions of the program's values (never materialised), written densely to `out`:
/// sum -> 1x1 of sum_t<out type>, mean -> 1x1 double (sum / count), min/max -> 1x1 of the out
/// type (NaN propagates; the caller refuses empty programs), row_sums -> rows x 1 of sum_t,
/// col_sums -> 1 x cols of sum_t. Deterministic (no atomics; the combination order depends
/// only on the shape and the device). sum, min, max and mean are bitwise what materialising
/// the expression into a dense rows x cols matrix and reducing it with launch_reduce
/// (DefaultReduceConfig) gives: the same per-thread sequence, grid and combination tree.
/// row_sums and col_sums accumulate in sum_acc_t (double for float, compensated for double).
void run_reduce(const Program& p, ReduceKind kind, void* out, const Stream& stream);

/// For benchmarks: the fused reductions' minimum blocks per SM, as DEVMAT_EXPR_REDUCE_MINBLOCKS
/// would set it (n >= 0: exactly n, no backing off on spills); -1 restores the default.
void set_expr_reduce_min_blocks(int n);

/// For benchmarks and tests: the elements per vector unit of small flat element-wise
/// evaluations, in a kernel of their own (plan_elementwise's small_vector: 1, 2 or 4 for
/// float; 0 restores the default kernel, 16 bytes a unit). Process-wide.
void set_expr_small_vector(int elements);

/// For benchmarks and tests: the units a thread of large flat element-wise evaluations takes
/// (plan_elementwise's flat_units: 1 .. 8, all their loads in flight at once); 0 restores the
/// default, elementwise_unroll. Process-wide.
void set_expr_flat_units(int units);

/// For benchmarks and tests: launch the generated kernels through the driver's cuLaunchKernel
/// (the default; the runtime's cudaLaunchKernel where the driver's fails or is not available)
/// or always through cudaLaunchKernel (false). Process-wide. Returns whether the driver's
/// launch is now in use (false also where the runtime does not give its entry points).
bool set_expr_driver_launch(bool on);

/// arg_min / arg_max: the flat row-major index of the first extreme value of the program's
/// values (NaN: the first NaN), written as one int64 to `out` (device); -1 for an empty
/// program. Deterministic.
void run_arg_reduce(const Program& p, bool max, void* out, const Stream& stream);

}  // namespace devmat::detail
