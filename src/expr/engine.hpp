// The engine that runs expression programs (expr/program.hpp): kernels generated per program
// structure, compiled with NVRTC and cached. Plain C++ interface.
#pragma once

#include "expr/program.hpp"

namespace devmat::detail {

/// out(r, c) = the program's value at (r, c), out of the program's out_type with row stride
/// ld_out, on `stream` (already ordered after the operands; out may be one leaf's very window).
void run_elementwise(const Program& p, void* out, Index ld_out, const Stream& stream);

enum class ReduceKind { sum, min, max, mean, row_sums, col_sums };
/// Fused reductions of the program's values, written densely to `out` (see the engine).
void run_reduce(const Program& p, ReduceKind kind, void* out, const Stream& stream);

/// The flat row-major index of the first smallest (largest) value, as one int64 at `out`.
void run_arg_reduce(const Program& p, bool max, void* out, const Stream& stream);

}  // namespace devmat::detail
