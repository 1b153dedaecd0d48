// GEMM dispatch: from a checked product to kernel launches. Plans the product with the cost
// model (dispatch/gemm_cost_model.hpp) over the registry's configurations, sizes the
// workspaces (split-K partial sums, row-padded operand copies) and launches.
#pragma once

#include "dispatch/common.hpp"
#include "dispatch/device.hpp"
#include "dispatch/gemm_registry.cuh"
#include "dispatch/gemm_tuning.hpp"
#include "dispatch/launch.cuh"
#include "dispatch/workspace.hpp"
#include "kernels/gemm_gemv.cuh"

#include <devmat/gemm.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>

namespace devmat::detail {

/// A row-major matrix in device memory as the GEMM reads it: rows x cols, row stride ld >= cols.
template <class T>
struct GemmMatrix {
  const T* data;
  Index rows, cols, ld;
};

/// How the column GEMV runs (gemv_cols_force, for tests and the benchmark).
inline std::atomic<GemvCols> g_gemv_cols{GemvCols::automatic};

/// The plan of an m x n x k product of T on the current device under the current FloatMath.
/// `a_aligned` / `b_aligned`: the operand's rows allow 16-byte reads (else a configuration that
/// needs them pays for padded copies in the model).
template <class T>
GemmPlan plan_product(int m, int n, int k, bool a_kcontig, bool b_kcontig, int forced_config = -1,
                      int forced_splits = 0, bool a_aligned = true, bool b_aligned = true) {
  const DeviceProps& props = current_device_props();
  const GemmProblem problem{gemm_element<T>(), m, n, k, a_kcontig, b_kcontig, float_math() == FloatMath::tf32x3,
                            a_aligned, b_aligned};
  const auto& kernels = tiled_kernels<T>();
  return plan_gemm(problem, tiled_infos<T>(), [&](int i) { return kernels[static_cast<std::size_t>(i)].occupancy(); },
                   GemmDevice{props.sm_count, props.arch()}, forced_config, forced_splits);
}

/// c[i] = alpha * sum_z ws[z*len + i] + beta * c[i] (splits == 0: c = beta c, or 0).
template <class T>
void launch_finalize(cudaStream_t s, long long len, int splits, const T* ws, T* c, T alpha, T beta) {
  const long long blocks = std::min<long long>(ceil_div(len, 256), current_device_props().sm_count * 8ll);
  launch(&gemm_finalize_kernel<T>, static_cast<unsigned>(std::max<long long>(blocks, 1)), 256, 0, s, len, splits, ws,
         c, alpha, beta, beta != T(0));
}

/// y (len) = alpha * (matrix times x) + beta * y, memory-bound. `rows`: y[i] = mat row i . x
/// (rows of length k, stride ld); else y[j] = sum_k x[k] mat[k*ld + j].
template <class T>
void run_gemv(const Stream& stream, bool rows, const T* mat, long long ld, int len, int k, const T* x, T alpha,
              T beta, T* y) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const cudaStream_t s = stream.native();
  const int sms = current_device_props().sm_count;
  const int target_blocks = sms * 8;  // 8 blocks of 256 threads fill an SM
  const bool vec = is_aligned(mat, 16) && ld % V == 0 && (!rows || is_aligned(x, 16));
  long long blocks_x;
  int splits, k_chunk;
  // k's slices in 64 bits: k may be up to kMaxDim (INT_MAX - 256), so k + splits - 1 is not an
  // int (a 2 x 2146000001 float matrix times a vector made splits negative and grid.y 2^32 - 1055).
  const long long k_ll = k;
  if (rows) {
    blocks_x = ceil_div(len, kGemvThreads / 32);
    const long long want = ceil_div(target_blocks, blocks_x);
    splits = static_cast<int>(std::clamp<long long>(want, 1, std::max(1, k / (128 * V))));
    k_chunk = static_cast<int>(round_up(ceil_div(k_ll, splits), 32 * V));  // a multiple of V (<= kMaxDim + 31 V)
  } else {
    blocks_x = ceil_div(len, 32 * (vec ? V : 1));
    const long long want = ceil_div(target_blocks, blocks_x);
    splits = static_cast<int>(std::clamp<long long>(want, 1, std::max(1, k / 64)));
    k_chunk = static_cast<int>(ceil_div(k_ll, splits));
    // Where k slices are needed and 32-column blocks of 1024 threads (one per SM) cover most
    // SMs, one pass over k keeps as many loads in flight as the slices would, without their
    // second kernel (1x4096x4096 on an H200: 1.57 TFLOP/s against 1.38 with slices, and 1.43
    // with clusters of 8 slices adding up through distributed shared memory, since dropped).
    const long long narrow = ceil_div(len, 32);
    GemvCols how = g_gemv_cols.load(std::memory_order_relaxed);
    if (how == GemvCols::automatic) how = splits > 1 && 4 * narrow >= 3ll * sms ? GemvCols::narrow : GemvCols::split;
    if (how == GemvCols::narrow && narrow <= INT_MAX) {
      const GemvOut<T> out{y, nullptr, len, alpha, beta, beta != T(0), false};
      launch(&gemv_cols_kernel<T, false, 1024>, static_cast<unsigned>(narrow), 1024, 0, s, mat, ld, len, k, x, k, out);
      return;
    }
  }
  splits = static_cast<int>(ceil_div(k_ll, k_chunk));
  if (blocks_x > INT_MAX) throw shape_error("devmat: gemm: vector length past the grid limit");
  Workspace ws;
  if (splits > 1) ws = Workspace::of<T>(static_cast<std::size_t>(splits) * static_cast<std::size_t>(len), stream);
  const GemvOut<T> out{y, ws.as<T>(), len, alpha, beta, beta != T(0), splits > 1};
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(splits));
  if (rows) {
    if (vec) launch(&gemv_rows_kernel<T, true>, grid, kGemvThreads, 0, s, mat, ld, len, k, x, k_chunk, out);
    else launch(&gemv_rows_kernel<T, false>, grid, kGemvThreads, 0, s, mat, ld, len, k, x, k_chunk, out);
  } else {
    if (vec) launch(&gemv_cols_kernel<T, true>, grid, kGemvThreads, 0, s, mat, ld, len, k, x, k_chunk, out);
    else launch(&gemv_cols_kernel<T, false>, grid, kGemvThreads, 0, s, mat, ld, len, k, x, k_chunk, out);
  }
  if (splits > 1) launch_finalize(s, len, splits, ws.as<const T>(), y, alpha, beta);
}

/// C (m x n, row stride ldc) = alpha op(A) op(B) + beta C with one tiled configuration. With
/// several k slices the partial sums go to a dense workspace, so then ldc must be n; a
/// configuration that sums its slices in a cluster (cluster_splits) writes C itself.
template <class T>
void run_tiled(const Stream& stream, const TiledKernel<T>& kc, int splits, int m, int n, int k,
               const GemmOperand<T>& a, const GemmOperand<T>& b, T alpha, T beta, T* c, long long ldc) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));  // the epilogue's store width
  const GemmConfigInfo& cfg = kc.info;
  // k slices: every one has per_split k tiles (the last one fewer, none empty).
  const GemmSlices slices = gemm_slices(k, cfg.bk, splits);
  const long long per_split = slices.per_split;
  splits = slices.splits;
  const long long tiles_m = ceil_div(static_cast<long long>(m), cfg.bm), tiles_n = ceil_div(static_cast<long long>(n), cfg.bn);
  if (tiles_m * tiles_n > INT_MAX || splits > 65535) throw shape_error("devmat: gemm: product past the grid limit");

  // One slice, or slices that a cluster adds up: the kernel writes C; else partial sums.
  const bool in_kernel_sum = splits == 1 || cfg.cluster_splits >= splits;
  GemmArgs<T> p{};
  p.m = m, p.n = n, p.k = k;
  p.a = a, p.b = b;
  p.ldc = in_kernel_sum ? ldc : n;
  p.k_per_split = static_cast<int>(std::min<long long>(per_split * cfg.bk, INT_MAX));
  p.tiles_m = static_cast<int>(tiles_m), p.tiles_n = static_cast<int>(tiles_n);
  Workspace ws;
  if (in_kernel_sum) {
    p.c = c, p.c_vec = is_aligned(c, 16) && ldc % V == 0;
    p.alpha = alpha, p.beta = beta, p.read_c = beta != T(0);
    p.split_stride = 0;
  } else {
    ws = Workspace::of<T>(static_cast<std::size_t>(splits) * static_cast<std::size_t>(m) * static_cast<std::size_t>(n),
                          stream);
    p.c = ws.as<T>(), p.c_vec = is_aligned(p.c, 16) && n % V == 0;
    p.alpha = T(1), p.beta = T(0), p.read_c = false;
    p.split_stride = static_cast<long long>(m) * n;
  }
  const long long tiles = tiles_m * tiles_n;
  if (splits == 1 && cfg.tail_split) {
    // Whole rounds of tiles here, the partly filled last round's tiles with k cut in slices
    // that add up in clusters, spread over the SMs that round would leave idle.
    const DeviceProps& props = current_device_props();
    const GemmTail tail =
        gemm_tail_plan(gemm_arch_model(props.arch()), tiles, props.sm_count, kc.occupancy(), k, cfg.bk, cfg.cluster_splits);
    if (tail.splits > 1) {
      kc.launch(p, dim3(static_cast<unsigned>(tail.main_tiles)), stream.native());
      const GemmSlices tail_slices = gemm_slices(k, cfg.bk, tail.splits);
      p.k_per_split = static_cast<int>(std::min<long long>(tail_slices.per_split * cfg.bk, INT_MAX));
      p.tile_offset = static_cast<int>(tail.main_tiles);
      kc.launch(p, dim3(static_cast<unsigned>(tiles - tail.main_tiles), 1, static_cast<unsigned>(tail_slices.splits)),
                stream.native());
      return;
    }
  }
  const dim3 grid(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(splits));
  kc.launch(p, grid, stream.native());
  if (!in_kernel_sum)
    launch_finalize(stream.native(), static_cast<long long>(m) * n, splits, ws.as<const T>(), c, alpha, beta);
}

// ------------------------------------------------------------------ padded copies
template <class T>
bool rows_aligned(const T* data, Index ld) {
  return is_aligned(data, 16) && ld % (16 / static_cast<Index>(sizeof(T))) == 0;
}

/// M with each row padded to a multiple of 16 bytes in `ws` (the padding is never read: tile
/// loads stop at the logical row length).
template <class T>
GemmMatrix<T> padded_copy(const GemmMatrix<T>& M, Workspace& ws, const Stream& stream) {
  const Index ld = round_up(M.cols, 16 / static_cast<Index>(sizeof(T)));
  ws = Workspace::of<T>(static_cast<std::size_t>(M.rows) * static_cast<std::size_t>(ld), stream);
  copy_rows(ws.as<T>(), ld, M.data, M.ld, M.rows, M.cols, stream);
  return {ws.as<const T>(), M.rows, M.cols, ld};
}

/// C (m x n, dense, not aliasing A or B) = alpha op(A) op(B) + beta C, on `stream`, shapes
/// already checked. forced_config >= 0 runs that configuration (for tests and benches).
template <class T>
void run_gemm(const Stream& stream, int forced_config, int forced_splits, int m, int n, int k, T alpha,
              const GemmMatrix<T>& A, Op op_a, const GemmMatrix<T>& B, Op op_b, T beta, T* c) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  const long long len = static_cast<long long>(m) * n;
  if (k == 0 || alpha == T(0)) {  // C = beta C, A and B are not read (as BLAS)
    launch_finalize(stream.native(), len, 0, static_cast<const T*>(nullptr), c, alpha, beta);
    return;
  }
  // Row-major storage: ld is the stored row stride either way.
  const bool a_kcontig = op_a == Op::none, b_kcontig = op_b == Op::transpose;
  const GemmPlan plan = plan_product<T>(m, n, k, a_kcontig, b_kcontig, forced_config, forced_splits,
                                        rows_aligned(A.data, A.ld), rows_aligned(B.data, B.ld));
  switch (plan.kind) {
    case GemmPlanKind::none: return;
    case GemmPlanKind::gemv_rows:
    case GemmPlanKind::gemv_cols: {
      // m == 1: x is A's only row or column (contiguous either way), the matrix is B;
      // n == 1: x is B's, the matrix is A.
      const bool rows = plan.kind == GemmPlanKind::gemv_rows;
      if (m == 1) run_gemv(stream, rows, B.data, B.ld, n, k, A.data, alpha, beta, c);
      else run_gemv(stream, rows, A.data, A.ld, m, k, B.data, alpha, beta, c);
      return;
    }
    case GemmPlanKind::tiled: {
      // Rows whose length breaks 16-byte alignment make the kernels copy and store element by
      // element. When the product is large, a copy whose rows are padded to 16 bytes costs
      // far less than that (4097^3 float: ~0.1 ms of copies against ~1 ms lost).
      // Kernels that read operands in 16-byte chunks only (aligned_rows) get padded copies at
      // any size (the cost model counts them: gemm_pad_seconds).
      const TiledKernel<T>& kernel = tiled_kernels<T>()[static_cast<std::size_t>(plan.config)];
      const bool pad = static_cast<double>(m) * n * k >= kPadMinFma;
      const bool pad_ab = pad || kernel.info.aligned_rows;
      Workspace a_ws, b_ws, c_ws;
      const GemmMatrix<T> a_src = pad_ab && !rows_aligned(A.data, A.ld) ? padded_copy(A, a_ws, stream) : A;
      const GemmMatrix<T> b_src = pad_ab && !rows_aligned(B.data, B.ld) ? padded_copy(B, b_ws, stream) : B;
      const GemmOperand<T> a{a_src.data, a_src.ld, a_kcontig, rows_aligned(a_src.data, a_src.ld)};
      const GemmOperand<T> b{b_src.data, b_src.ld, b_kcontig, rows_aligned(b_src.data, b_src.ld)};
      // C is padded only with one k slice (split-K partial sums go to a dense workspace, and
      // the finalize writes a dense C).
      if (pad && !rows_aligned(static_cast<const T*>(c), Index(n)) && plan.splits == 1) {
        const Index ld = round_up(n, V);
        c_ws = Workspace::of<T>(static_cast<std::size_t>(m) * static_cast<std::size_t>(ld), stream);
        if (beta != T(0)) copy_rows(c_ws.as<T>(), ld, c, n, m, n, stream);
        run_tiled(stream, kernel, 1, m, n, k, a, b, alpha, beta, c_ws.as<T>(), static_cast<long long>(ld));
        copy_rows(c, n, c_ws.as<const T>(), ld, m, n, stream);
      } else {
        run_tiled(stream, kernel, plan.splits, m, n, k, a, b, alpha, beta, c, static_cast<long long>(n));
      }
      return;
    }
  }
}

}  // namespace devmat::detail
