// The GEMM's compiled-in kernel configurations, and ways to force one, for the tests and the
// benchmark. Plain C++ declarations, defined in src/gemm.cu.
#pragma once

#include "dispatch/gemm_cost_model.hpp"

#include <devmat/gemm.hpp>

#include <string>
#include <vector>

namespace devmat::detail {

/// The tiled configurations for T (float, double, int32_t), in the order gemm_forced indexes them.
template <class T> std::vector<GemmConfigInfo> gemm_configs();

/// gemm(alpha, A, B, beta, C, op_a, op_b) with the tiled configuration `config` (an index into
/// gemm_configs<T>(), which also bypasses the GEMV path for m == 1 or n == 1) and `splits`
/// k-slices (0: the cost model's choice for that configuration). config == -1 is gemm itself.
/// Throws std::invalid_argument for an unknown configuration, before anything runs.
template <class T>
void gemm_forced(int config, int splits, T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta,
                 DeviceMatrix<T>& C, Op op_a = Op::none, Op op_b = Op::none);

/// The kernel that the GEMVs y = x op(B) (m == 1) and y = op(A) x (n == 1) run when the matrix
/// is read along its rows (op(B) = B, op(A) = A^T): gemm's choice (automatic); k slices and a
/// kernel that adds them (split); or 1024-thread, 32-column blocks in one pass (narrow).
/// Process-wide; for the tests and the benchmark.
enum class GemvCols { automatic, split, narrow };
void gemv_cols_force(GemvCols variant);

/// What gemm would run for an m x n x k product of T, its operands dense matrices (rows as
/// long as op() leaves them), on the current device, in words:
/// "gemv-rows" or "gemv-cols" (m == 1 or n == 1), "<config> s=<splits>" (a tiled
/// configuration and its k slices), "none" (an empty product or k == 0), or "unsupported" (a
/// dimension past gemm's limit).
template <class T> std::string gemm_plan(Index m, Index n, Index k, Op op_a = Op::none, Op op_b = Op::none);

}  // namespace devmat::detail
