// The emulation library's own functions (test_expr_emulation.cpp compiles them with the
// generated kernels into one shared object): a reference evaluation of an expression tree, read
// straight from its leaves (no lowering, no broadcast kinds, no kernel), and the precompiled
// reductions the engine shares (kernels/reduce.cuh): launch_reduce's two passes and the row and
// column chunk sums. Needs emu_ops.h (the ExprOp and DType numbers, written by the test).
#pragma once

#include "emu_cuda.hpp"
#include "emu_ops.h"
#include "expr_ops.cuh"
#include "reduce.cuh"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace emu {

using devmat::Index;
namespace d = devmat::detail;

/// One node of a tree, children by index.
struct Node {
  int op, type, a, b, c;
  const void* data;
  long stride, rows, cols;
  unsigned long long bits;
};

union Val {
  float f;
  double d;
  std::int32_t i;
  std::uint8_t u;
  std::int64_t l;
  std::uint64_t q;
  unsigned long long raw;
};

template <class T> T get(const Val& v) {
  T x;
  std::memcpy(&x, &v, sizeof(T));
  return x;
}
template <class T> Val put(T x) {
  Val v{};
  std::memcpy(&v, &x, sizeof(T));
  return v;
}

template <class F>
Val by_type(int t, F&& f) {
  switch (t) {
    case kF32: return f(float{});
    case kF64: return f(double{});
    case kI32: return f(std::int32_t{});
    case kU8: return f(std::uint8_t{});
    case kI64: return f(std::int64_t{});
    default: return f(std::uint64_t{});
  }
}

[[noreturn]] inline void bad(const char* what) {
  std::fprintf(stderr, "emulation reference: %s\n", what);
  std::abort();
}

inline Val eval(const Node* n, int i, long r, long c) {
  const Node& e = n[i];
  if (e.op == kOpLeaf) {
    const long rr = e.rows == 1 ? 0 : r, cc = e.cols == 1 ? 0 : c;
    return by_type(e.type, [&](auto x) {
      using T = decltype(x);
      return put(static_cast<const T*>(e.data)[rr * e.stride + cc]);
    });
  }
  if (e.op == kOpScalar) {
    Val v{};
    v.raw = e.bits;
    return v;
  }
  const Val va = eval(n, e.a, r, c);
  const int ta = n[e.a].type;
  if (e.op == kOpCast)
    return by_type(e.type, [&](auto y) {
      using U = decltype(y);
      return by_type(ta, [&](auto x) {
        using T = decltype(x);
        return put(d::op_cast<U, T>(get<T>(va)));
      });
    });
  if (e.op == kOpLogicalNot)
    return by_type(ta, [&](auto x) { return put(d::op_logical_not(get<decltype(x)>(va))); });
  if (e.op == kOpSelect) {
    const Val vb = eval(n, e.b, r, c), vc = eval(n, e.c, r, c);
    return by_type(ta, [&](auto m) {
      using M = decltype(m);
      return by_type(e.type, [&](auto x) {
        using T = decltype(x);
        return put(d::op_select<M, T>(get<M>(va), get<T>(vb), get<T>(vc)));
      });
    });
  }
  if (e.b < 0) {  // unary, in the result's type
    return by_type(e.type, [&](auto x) -> Val {
      using T = decltype(x);
      const T a = get<T>(va);
      if (e.op == kOpNeg) return put(d::op_neg(a));
      if (e.op == kOpAbs) return put(d::op_abs(a));
      if (e.op == kOpSquare) return put(d::op_square(a));
      if constexpr (std::is_floating_point_v<T>) {
        if (e.op == kOpSqrt) return put(d::op_sqrt(a));
        if (e.op == kOpRsqrt) return put(d::op_rsqrt(a));
        if (e.op == kOpExp) return put(d::op_exp(a));
        if (e.op == kOpLog) return put(d::op_log(a));
        if (e.op == kOpLog1p) return put(d::op_log1p(a));
        if (e.op == kOpExpm1) return put(d::op_expm1(a));
        if (e.op == kOpSin) return put(d::op_sin(a));
        if (e.op == kOpCos) return put(d::op_cos(a));
        if (e.op == kOpTanh) return put(d::op_tanh(a));
        if (e.op == kOpFloor) return put(d::op_floor(a));
        if (e.op == kOpCeil) return put(d::op_ceil(a));
        if (e.op == kOpRound) return put(d::op_round(a));
      }
      bad("unary op");
    });
  }
  const Val vb = eval(n, e.b, r, c);
  const int tb = n[e.b].type;
  if (e.op == kOpLogicalAnd || e.op == kOpLogicalOr)
    return by_type(ta, [&](auto x) {
      using A = decltype(x);
      return by_type(tb, [&](auto y) {
        using B = decltype(y);
        return e.op == kOpLogicalAnd ? put(d::op_logical_and<A, B>(get<A>(va), get<B>(vb)))
                                     : put(d::op_logical_or<A, B>(get<A>(va), get<B>(vb)));
      });
    });
  if (e.op >= kOpEq && e.op <= kOpGe)
    return by_type(ta, [&](auto x) -> Val {
      using T = decltype(x);
      const T a = get<T>(va), b = get<T>(vb);
      if (e.op == kOpEq) return put(d::op_eq(a, b));
      if (e.op == kOpNe) return put(d::op_ne(a, b));
      if (e.op == kOpLt) return put(d::op_lt(a, b));
      if (e.op == kOpLe) return put(d::op_le(a, b));
      if (e.op == kOpGt) return put(d::op_gt(a, b));
      return put(d::op_ge(a, b));
    });
  return by_type(e.type, [&](auto x) -> Val {
    using T = decltype(x);
    const T a = get<T>(va), b = get<T>(vb);
    if (e.op == kOpAdd) return put(d::op_add(a, b));
    if (e.op == kOpSub) return put(d::op_sub(a, b));
    if (e.op == kOpMul) return put(d::op_mul(a, b));
    if (e.op == kOpDiv) return put(d::op_div(a, b));
    if (e.op == kOpMin) return put(d::op_min(a, b));
    if (e.op == kOpMax) return put(d::op_max(a, b));
    if constexpr (std::is_floating_point_v<T>)
      if (e.op == kOpPow) return put(d::op_pow(a, b));
    bad("binary op");
  });
}

template <class T> struct sum_type { using type = T; };
template <> struct sum_type<std::int32_t> { using type = std::int64_t; };
template <> struct sum_type<std::uint8_t> { using type = std::uint64_t; };

template <class F>
void with_type(int t, F&& f) {
  by_type(t, [&](auto x) {
    f(x);
    return Val{};
  });
}

}  // namespace emu

/// Registers the windows kernels may read (4 longs each: address, rows, row bytes, stride
/// bytes) and clears the record of reads outside them; n = 0 stops checking. Returns the reads
/// outside since the last call, and the first of them in `first` (256 bytes).
extern "C" long emu_readable(const long* windows, int n, char* first) {
  const long bad = emu::g_bad_reads;
  if (first) std::memcpy(first, emu::g_first_bad_read, sizeof(emu::g_first_bad_read));
  emu::g_readable.clear();
  for (int k = 0; k < n; ++k)
    emu::g_readable.push_back({reinterpret_cast<const unsigned char*>(windows[4 * k]), windows[4 * k + 1],
                               windows[4 * k + 2], windows[4 * k + 3]});
  emu::g_check_reads = n > 0;
  emu::g_bad_reads = 0;
  emu::g_first_bad_read[0] = 0;
  return bad;
}

/// The value of node `root` at (r, c), written in its type to out (8 bytes).
extern "C" void emu_reference(const emu::Node* nodes, int root, long r, long c, void* out) {
  const emu::Val v = emu::eval(nodes, root, r, c);
  std::memcpy(out, &v, 8);
}

/// launch_reduce (dispatch/reduce.cuh) over a dense, aligned in[0, n) with the given grid: op
/// 0 sum, 1 min, 2 max, 3 mean. One block: reduce_kernel with the final step; else its partials
/// (returned through `partials`, grid of them) and reduce_partials_kernel.
extern "C" void emu_plain_reduce(int type, int op, const void* in, long n, unsigned grid, void* partials, void* out) {
  namespace d = devmat::detail;
  emu::with_type(type, [&](auto x) {
    using T = decltype(x);
    using Acc = d::sum_acc_t<T>;
    using S = typename emu::sum_type<T>::type;
    const T* data = static_cast<const T*>(in);
    const auto run = [&](auto reducer, auto fin) {
      using R = decltype(reducer);
      using Fin = decltype(fin);
      using A = typename R::Acc;
      using ToAcc = d::CastTo<A, A>;
      if (grid == 1) {
        emu::launch(1, 256, [&] { d::reduce_kernel<R, 256, 4, Fin>(data, n, static_cast<typename Fin::Out*>(out), fin); });
        return;
      }
      A* part = static_cast<A*>(partials);
      emu::launch(grid, 256, [&] { d::reduce_kernel<R, 256, 4, ToAcc>(data, n, part, ToAcc{}); });
      emu::launch(1, 256, [&] {
        d::reduce_partials_kernel<R, 256, Fin>(part, grid, static_cast<typename Fin::Out*>(out), fin);
      });
    };
    if (op == 0) run(d::SumReducer<T>{}, d::CastTo<Acc, S>{});
    else if (op == 3) run(d::SumReducer<T>{}, d::MeanOf<Acc>{static_cast<double>(n)});
    else if (op == 1) run(d::MinMaxReducer<T, false>{}, d::CastTo<T, T>{});
    else run(d::MinMaxReducer<T, true>{}, d::CastTo<T, T>{});
  });
}

/// launch_reduce's second pass alone (what the engine runs after a fused first pass).
extern "C" void emu_second_pass(int type, int op, const void* partials, long count, void* out, double n) {
  namespace d = devmat::detail;
  emu::with_type(type, [&](auto x) {
    using T = decltype(x);
    using Acc = d::sum_acc_t<T>;
    using S = typename emu::sum_type<T>::type;
    if (op == 0)
      emu::launch(1, 256, [&] {
        d::reduce_partials_kernel<d::SumReducer<T>, 256, d::CastTo<Acc, S>>(static_cast<const Acc*>(partials), count,
                                                                            static_cast<S*>(out), d::CastTo<Acc, S>{});
      });
    else if (op == 3)
      emu::launch(1, 256, [&] {
        d::reduce_partials_kernel<d::SumReducer<T>, 256, d::MeanOf<Acc>>(static_cast<const Acc*>(partials), count,
                                                                         static_cast<double*>(out), d::MeanOf<Acc>{n});
      });
    else if (op == 1)
      emu::launch(1, 256, [&] {
        d::reduce_partials_kernel<d::MinMaxReducer<T, false>, 256, d::CastTo<T, T>>(
            static_cast<const T*>(partials), count, static_cast<T*>(out), d::CastTo<T, T>{});
      });
    else
      emu::launch(1, 256, [&] {
        d::reduce_partials_kernel<d::MinMaxReducer<T, true>, 256, d::CastTo<T, T>>(
            static_cast<const T*>(partials), count, static_cast<T*>(out), d::CastTo<T, T>{});
      });
  });
}

/// The second passes of split row and column sums (launch_row_chunk_sums, launch_col_chunk_sums).
extern "C" void emu_row_chunks(int type, const void* partials, long rows, long chunks, void* out) {
  namespace d = devmat::detail;
  emu::with_type(type, [&](auto x) {
    using T = decltype(x);
    using Acc = d::sum_acc_t<T>;
    using S = typename emu::sum_type<T>::type;
    const unsigned blocks = static_cast<unsigned>((rows * 32 + 255) / 256);
    emu::launch(blocks, 256, [&] {
      d::segment_sums_kernel<d::SumReducer<T>, S>(static_cast<const Acc*>(partials), rows, chunks, static_cast<S*>(out));
    });
  });
}

extern "C" void emu_col_chunks(int type, const void* partials, long cols, long chunks, void* out) {
  namespace d = devmat::detail;
  emu::with_type(type, [&](auto x) {
    using T = decltype(x);
    using Acc = d::sum_acc_t<T>;
    using S = typename emu::sum_type<T>::type;
    emu::launch(static_cast<unsigned>((cols + 31) / 32), dim3(32, 32), [&] {
      d::col_chunks_kernel<Acc, S>(static_cast<const Acc*>(partials), cols, chunks, static_cast<S*>(out));
    });
  });
}
