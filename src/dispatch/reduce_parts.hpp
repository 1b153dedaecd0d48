// The parts of the precompiled reductions (dispatch/reduce.cuh, instantiated in reduce.cu) that
// the fused expression reductions (src/expr/engine.cpp) share: the grid cap of launch_reduce's
// first pass, and the second passes, so that a fused sum, min, max or mean combines its block
// partials exactly as the unfused one does. Plain C++.
#pragma once

#include <devmat/error.hpp>
#include <devmat/stream.hpp>

namespace devmat::detail {

enum class ReduceOp : int { sum, min, max, mean };

/// The grid cap of launch_reduce<R, DefaultReduceConfig> for T on the current device: the
/// resident blocks of its first-pass kernel (SumReducer<T> for sum and mean, MinMaxReducer<T>
/// for min and max), cached.
template <class T>
long long reduce_first_pass_cap(ReduceOp op);

/// launch_reduce's second pass: one block combines `count` partials (sum_acc_t<T> for sum and
/// mean, T for min and max) and writes the result to `out` (sum_t<T>, double for the mean,
/// which divides by `n`, T for min and max).
template <class T>
void launch_reduce_second_pass(ReduceOp op, const Stream& stream, const void* partials, Index count, void* out,
                               double n);

/// out[r] = sum over k < chunks of partials[r * chunks + k] (sum_acc_t<T>), as sum_t<T>, for
/// r < rows: the second pass of launch_row_sums's split rows.
template <class T>
void launch_row_chunk_sums(const Stream& stream, const void* partials, Index rows, Index chunks, void* out);

/// out[c] = sum over k < chunks of partials[k * cols + c] (sum_acc_t<T>), as sum_t<T>, for
/// c < cols: the second pass of launch_col_sums's split columns.
template <class T>
void launch_col_chunk_sums(const Stream& stream, const void* partials, Index cols, Index chunks, void* out);

}  // namespace devmat::detail
