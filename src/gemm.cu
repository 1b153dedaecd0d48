// Matrix products: gemm (C = alpha op(A) op(B) + beta C) and operator*. The entry points check
// shapes and aliasing and pick the stream; dispatch/gemm.cuh plans the product with the cost
// model and launches. Kernels: tensor-core tiles (kernels/gemm_mma.cuh) for double (FP64 DMMA)
// and float (3xTF32, FP32-accurate; on sm_90 also the wgmma tile, kernels/gemm_wgmma.cuh), CUDA-core SIMT tiles (kernels/gemm_simt.cuh) for int32 and
// for float under FloatMath::simt, GEMVs (kernels/gemm_gemv.cuh) for m == 1 or n == 1.
#include "detail/device_guard.hpp"
#include "detail/runtime.hpp"
#include "detail/view_overlap.hpp"
#include "dispatch/gemm.cuh"
#include "dispatch/gemm_tuning.hpp"

#include <devmat/gemm.hpp>

#include <atomic>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace devmat {
namespace detail {
namespace {

// Kernels index within a dimension in int; this leaves room for a tile past the last index.
constexpr Index kMaxDim = INT_MAX - 256;

std::atomic<FloatMath> g_float_math{FloatMath::tf32x3};

template <class T>
GemmMatrix<T> gemm_matrix(const DeviceMatrix<T>& M) {
  return {M.data(), M.rows(), M.cols(), M.cols()};
}

struct Dims {
  Index m, n, k;
};

/// Shape checks, before anything is allocated or launched.
template <class M, class N, class P>
Dims check_gemm(const char* name, const M& A, const N& B, const P& C, Op op_a, Op op_b) {
  const Index m = op_a == Op::none ? A.rows() : A.cols();
  const Index ka = op_a == Op::none ? A.cols() : A.rows();
  const Index kb = op_b == Op::none ? B.rows() : B.cols();
  const Index n = op_b == Op::none ? B.cols() : B.rows();
  if (ka != kb) throw_shape_error(name, m, ka, kb, n, "(op(A) and op(B)) do not match: inner dimensions differ");
  if (!C.empty() && (C.rows() != m || C.cols() != n))
    throw_shape_error(name, C.rows(), C.cols(), m, n, "(C and op(A)*op(B)) do not match");
  if (m > kMaxDim || n > kMaxDim || ka > kMaxDim)
    throw_shape_error(name, m, ka, kb, n, "have a dimension past 2^31-257, which gemm does not support");
  return {m, n, ka};
}

template <class T>
void gemm_impl(const char* name, int forced_config, int forced_splits, T alpha, const DeviceMatrix<T>& A,
               const DeviceMatrix<T>& B, T beta, DeviceMatrix<T>& C, Op op_a, Op op_b) {
  // C's stream and device, whatever the caller's current one; an empty C that never had a
  // stream takes A's (the first operand's, as every operation).
  const Stream& raw = Access::raw_stream(C);
  const Stream run_on = Access::is_set(raw) ? raw : A.stream();
  const DeviceGuard device(run_on);
  const Dims d = check_gemm(name, A, B, C, op_a, op_b);
  if (forced_config < -1 || forced_config >= static_cast<int>(tiled_kernels<T>().size()))
    throw std::invalid_argument("devmat: gemm_forced: no configuration " + std::to_string(forced_config));
  if (forced_config >= 0 && tiled_infos<T>()[static_cast<std::size_t>(forced_config)].math == GemmMath::tf32x3 &&
      current_device_props().cc_major < 8)
    throw std::invalid_argument("devmat: gemm_forced: configuration " + std::to_string(forced_config) +
                                " needs the TF32 tensor cores (sm_80 or later)");
  if (C.empty() && (C.rows() != d.m || C.cols() != d.n)) {
    C = DeviceMatrix<T>(d.m, d.n, run_on);  // beta*C is taken as zero
    beta = T(0);
  }
  if (d.m == 0 || d.n == 0) return;
  const Stream stream = C.stream();
  if (C.data() == A.data() || C.data() == B.data()) {
    // C is an operand: compute into a fresh matrix (starting from C's values when beta needs
    // them), then give it to C; the old buffer is freed once the kernels reading it are done.
    DeviceMatrix<T> fresh(d.m, d.n, stream);
    if (beta != T(0)) {
      use_on(stream, C);
      DEVMAT_CUDA_TRY(cudaMemcpyAsync(fresh.data(), C.data(), static_cast<std::size_t>(C.size()) * sizeof(T),
                                      cudaMemcpyDeviceToDevice, stream.native()));
    }
    gemm_impl(name, forced_config, forced_splits, alpha, A, B, beta, fresh, op_a, op_b);
    C = std::move(fresh);
    return;
  }
  use_on(stream, A, B, C);
  run_gemm(stream, forced_config, forced_splits, static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k),
           alpha, gemm_matrix(A), op_a, gemm_matrix(B), op_b, beta, C.data());
}

/// gemm on views: C already has the product's shape.
template <class T>
void gemm_views(const char* name, T alpha, const MatrixView<const T>& A, const MatrixView<const T>& B, T beta,
                const MatrixView<T>& C, Op op_a, Op op_b) {
  const DeviceGuard device(C.stream());
  const Dims d = check_gemm(name, A, B, C, op_a, op_b);
  if (C.rows() != d.m || C.cols() != d.n)  // an empty C is not resized either
    throw_shape_error(name, C.rows(), C.cols(), d.m, d.n, "(C and op(A)*op(B)) do not match");
  if (d.m == 0 || d.n == 0) return;
  const Stream stream = C.stream();
  if (!C.contiguous() || windows_overlap<T>(C, A) || windows_overlap<T>(C, B)) {
    // Compute into a dense temporary (starting from C's values when beta needs them), then
    // copy it into the window.
    DeviceMatrix<T> tmp = beta != T(0) ? DeviceMatrix<T>(C) : DeviceMatrix<T>(d.m, d.n, stream);  // on C's stream
    gemm_views(name, alpha, A, B, beta, tmp.view(), op_a, op_b);
    MatrixView<T> window = C;  // (not `MatrixView<T>(C) = ...`, which declares a new C)
    window = tmp.view();       // copies the elements in
    return;
  }
  // A GEMV reads its vector operand as contiguous: a column of a strided view is copied first.
  const bool a_vector = d.m == 1 && op_a == Op::transpose && A.stride() != 1 && d.k > 1;
  const bool b_vector = d.n == 1 && op_b == Op::none && B.stride() != 1 && d.k > 1;
  if (a_vector || b_vector) {
    const DeviceMatrix<T> x(a_vector ? A : B);
    return a_vector ? gemm_views(name, alpha, x.view(), B, beta, C, op_a, op_b)
                    : gemm_views(name, alpha, A, x.view(), beta, C, op_a, op_b);
  }
  use_on(stream, A, B, C);
  run_gemm(stream, -1, 0, static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.k), alpha,
           GemmMatrix<T>{A.data(), A.rows(), A.cols(), A.stride()}, op_a,
           GemmMatrix<T>{B.data(), B.rows(), B.cols(), B.stride()}, op_b, beta, C.data());
}

}  // namespace

template <class T>
DeviceMatrix<T> multiply_views(const MatrixView<const T>& a, const MatrixView<const T>& b) {
  if (a.cols() != b.rows()) throw_shape_error("operator*", a.rows(), a.cols(), b.rows(), b.cols());
  const DeviceGuard device(a.stream());
  DeviceMatrix<T> c(a.rows(), b.cols(), a.stream());  // the result carries A's stream
  gemm_views("operator*", T(1), a, b, T(0), c.view(), Op::none, Op::none);
  return c;
}

template <class T>
DeviceMatrix<T> multiply(const DeviceMatrix<T>& a, const DeviceMatrix<T>& b) {
  if (a.cols() != b.rows()) throw_shape_error("operator*", a.rows(), a.cols(), b.rows(), b.cols());
  const DeviceGuard device(a.stream());
  DeviceMatrix<T> c(a.rows(), b.cols(), a.stream());  // the result carries A's stream
  gemm_impl("operator*", -1, 0, T(1), a, b, T(0), c, Op::none, Op::none);
  return c;
}

template <class T>
std::vector<GemmConfigInfo> gemm_configs() {
  return tiled_infos<T>();
}

template <class T>
void gemm_forced(int config, int splits, T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta,
                 DeviceMatrix<T>& C, Op op_a, Op op_b) {
  gemm_impl("gemm", config, splits, alpha, A, B, beta, C, op_a, op_b);
}

template <class T>
std::string gemm_plan(Index m, Index n, Index k, Op op_a, Op op_b) {
  if (m <= 0 || n <= 0 || k <= 0) return "none";
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim) return "unsupported";
  // Dense operands (as DeviceMatrix stores them): rows allow 16-byte reads when their length
  // does, which decides the padded copies the model charges (777^3 was labelled with the
  // wgmma tile, which gemm does not pick there, as if its rows were aligned).
  constexpr Index V = 16 / static_cast<Index>(sizeof(T));
  const Index a_ld = op_a == Op::none ? k : m, b_ld = op_b == Op::none ? n : k;
  const GemmPlan p = plan_product<T>(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), op_a == Op::none,
                                     op_b == Op::transpose, -1, 0, a_ld % V == 0, b_ld % V == 0);
  switch (p.kind) {
    case GemmPlanKind::none: return "none";
    case GemmPlanKind::gemv_rows: return "gemv-rows";
    case GemmPlanKind::gemv_cols: return "gemv-cols";
    case GemmPlanKind::tiled: break;
  }
  return tiled_infos<T>()[static_cast<std::size_t>(p.config)].name + " s=" + std::to_string(p.splits);
}

}  // namespace detail

void set_float_math(FloatMath mode) noexcept { detail::g_float_math.store(mode, std::memory_order_relaxed); }

void detail::gemv_cols_force(GemvCols variant) { detail::g_gemv_cols.store(variant, std::memory_order_relaxed); }

FloatMath float_math() noexcept { return detail::g_float_math.load(std::memory_order_relaxed); }

template <class T>
void gemm(T alpha, const DeviceMatrix<T>& A, const DeviceMatrix<T>& B, T beta, DeviceMatrix<T>& C, Op op_a, Op op_b) {
  detail::gemm_impl("gemm", -1, 0, alpha, A, B, beta, C, op_a, op_b);
}

template <class T>
void gemm(T alpha, const MatrixView<const T>& A, const MatrixView<const T>& B, T beta, const MatrixView<T>& C, Op op_a,
          Op op_b) {
  detail::gemm_views("gemm", alpha, A, B, beta, C, op_a, op_b);
}

#define DEVMAT_INSTANTIATE(T)                                                                              \
  template void gemm<T>(T, const DeviceMatrix<T>&, const DeviceMatrix<T>&, T, DeviceMatrix<T>&, Op, Op); \
  template DeviceMatrix<T> detail::multiply<T>(const DeviceMatrix<T>&, const DeviceMatrix<T>&);          \
  template DeviceMatrix<T> detail::multiply_views<T>(const MatrixView<const T>&, const MatrixView<const T>&); \
  template void gemm<T>(T, const MatrixView<const T>&, const MatrixView<const T>&, T, const MatrixView<T>&, Op, Op); \
  template std::vector<detail::GemmConfigInfo> detail::gemm_configs<T>();                                \
  template void detail::gemm_forced<T>(int, int, T, const DeviceMatrix<T>&, const DeviceMatrix<T>&, T,  \
                                       DeviceMatrix<T>&, Op, Op);                                        \
  template std::string detail::gemm_plan<T>(Index, Index, Index, Op, Op);
DEVMAT_INSTANTIATE(float)
DEVMAT_INSTANTIATE(double)
DEVMAT_INSTANTIATE(std::int32_t)
#undef DEVMAT_INSTANTIATE

}  // namespace devmat
