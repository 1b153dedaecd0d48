// Fused expressions (src/expr/engine.hpp, driven directly with lowered programs): the fused sum
// sum(square(A - B)) beside cub::DeviceReduce::TransformReduce (the target: >= 0.90), and the
// element-wise targets beside hand-written kernels of the same formulas (E1 = (2A + B) / 2 -
// |C|, E2 = A + B - C, E3 = sqrt(gx^2 + gy^2), and a broadcast one written into a strided
// window). Every "ours" row first checks its bits: the fused sum against the unfused one
// (materialise, then sum()), the element-wise results against the hand-written kernel's.
//
// Impl "ours-minblocksN": the fused sum with __launch_bounds__(256, N) forced (0: none), to
// see whether the residency matters on this GPU. Cold-start costs: run with
// DEVMAT_EXPR_VERBOSE=1 DEVMAT_CACHE_DIR=off to see each compilation's milliseconds.
#include "random.cuh"
#include "support.hpp"

#include "expr/engine.hpp"
#include "expr/node.hpp"
#include "expr/program.hpp"
#include "kernels/expr_ops.cuh"

#include <devmat/devmat.hpp>

#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
using devmat::Stream;
namespace b = devmat::bench;
namespace d = devmat::detail;
using d::DType;
using d::ExprOp;
using d::ExprPtr;

ExprPtr leaf(const DeviceMatrix<float>& m) { return d::expr_leaf<float>(m.view()); }
ExprPtr leaf(const devmat::MatrixView<const float>& v) { return d::expr_leaf<float>(v); }
ExprPtr bin(ExprOp op, ExprPtr a, ExprPtr b) { return d::expr_binary(op, std::move(a), std::move(b), DType::f32, "bench"); }
ExprPtr un(ExprOp op, ExprPtr a) { return d::expr_unary(op, std::move(a), DType::f32); }
ExprPtr num(float v) { return d::expr_scalar<float>(v); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ------------------------------------------------------------------ the fused sum
struct SqDiff {
  const float* a;
  const float* b;
  __device__ float operator()(long long i) const {
    return devmat::detail::op_square(devmat::detail::op_sub(a[i], b[i]));
  }
};

void register_sum(Index rows, Index cols) {
  const Index n = rows * cols;
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  const std::string sh = std::to_string(rows) + "x" + std::to_string(cols);
  const auto ours = [=](int min_blocks) {
    return [=](benchmark::State& st) {
      const auto A = b::random_matrix<float>(rows, cols, 1), B = b::random_matrix<float>(rows, cols, 2);
      const Stream s = A.stream();
      d::set_expr_reduce_min_blocks(min_blocks);
      struct Restore {
        ~Restore() { d::set_expr_reduce_min_blocks(-1); }
      } restore;
      const d::Program p = d::lower(*un(ExprOp::square, bin(ExprOp::sub, leaf(A), leaf(B))));
      DeviceMatrix<float> out(1, 1);
      d::run_reduce(p, d::ReduceKind::sum, out.data(), s);
      // Bitwise the unfused sum: materialise, then DeviceMatrix::sum.
      DeviceMatrix<float> C(rows, cols);
      d::run_elementwise(p, C.data(), cols, s);
      if (!same_bits(out.to_vector(), std::vector<float>{C.sum()}))
        return st.SkipWithError("the fused sum is not bitwise the unfused one");
      b::time_on_stream(st, s.native(), bytes, b::kGBps, [&] {
        d::run_reduce(d::lower(*un(ExprOp::square, bin(ExprOp::sub, leaf(A), leaf(B)))), d::ReduceKind::sum,
                      out.data(), s);
      });
    };
  };
  benchmark::RegisterBenchmark(b::name("expr_sum_sqdiff", "f32", sh, "ours").c_str(), ours(-1))
      ->UseManualTime()->Unit(benchmark::kMicrosecond);
  for (int mb : {0, 4, 8})
    benchmark::RegisterBenchmark(b::name("expr_sum_sqdiff", "f32", sh, "ours-minblocks" + std::to_string(mb)).c_str(),
                                 ours(mb))
        ->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name("expr_sum_sqdiff", "f32", sh, "ours-unfused").c_str(), [=](benchmark::State& st) {
    const auto A = b::random_matrix<float>(rows, cols, 1), B = b::random_matrix<float>(rows, cols, 2);
    const Stream s = A.stream();
    DeviceMatrix<float> C(rows, cols);
    b::time_on_stream(st, s.native(), bytes, b::kGBps, [&] {
      // Materialise, then sum: two passes (what sum() of an unfused expression costs at least).
      d::run_elementwise(d::lower(*un(ExprOp::square, bin(ExprOp::sub, leaf(A), leaf(B)))), C.data(), cols, s);
      auto r = C.sum_async();
    });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name("expr_sum_sqdiff", "f32", sh, "cub").c_str(), [=](benchmark::State& st) {
    const auto A = b::random_matrix<float>(rows, cols, 1), B = b::random_matrix<float>(rows, cols, 2);
    const cudaStream_t s = A.stream().native();
    DeviceMatrix<float> out(1, 1);
    const auto call = [&](void* tmp, std::size_t& tb) {
      return cub::DeviceReduce::TransformReduce(tmp, tb, thrust::counting_iterator<long long>(0), out.data(), n,
                                                cuda::std::plus<>{}, SqDiff{A.data(), B.data()}, 0.f, s);
    };
    std::size_t tb = 0;
    DEVMAT_BENCH_CUDA(call(nullptr, tb));
    DeviceMatrix<std::uint8_t> tmp(1, static_cast<Index>(tb ? tb : 1));
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { DEVMAT_BENCH_CUDA(call(tmp.data(), tb)); });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
}

// ------------------------------------------------------------------ element-wise targets
struct FE1 {
  __device__ float operator()(float a, float b, float c) const {
    using namespace devmat::detail;
    return op_sub(op_div(op_add(op_mul(2.f, a), b), 2.f), op_abs(c));
  }
};
struct FE2 {
  __device__ float operator()(float a, float b, float c) const {
    using namespace devmat::detail;
    return op_sub(op_add(a, b), c);
  }
};
struct FE3 {
  __device__ float operator()(float a, float b, float) const {
    using namespace devmat::detail;
    return op_sqrt(op_add(op_square(a), op_square(b)));
  }
};

/// Hand-written: 4 float4 per thread, all loads first, an exact grid (n % 4 == 0).
template <class F>
__global__ void __launch_bounds__(256) handwritten_kernel(const float* a, const float* b, const float* c, float* out,
                                                          Index n4, F f) {
  constexpr int U = 4;
  const Index first = static_cast<Index>(blockIdx.x) * (256 * U) + threadIdx.x;
  float4 x[U], y[U], z[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index i = first + u * 256;
    if (i < n4) {
      x[u] = reinterpret_cast<const float4*>(a)[i];
      y[u] = reinterpret_cast<const float4*>(b)[i];
      z[u] = reinterpret_cast<const float4*>(c)[i];
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const Index i = first + u * 256;
    if (i < n4)
      reinterpret_cast<float4*>(out)[i] = make_float4(f(x[u].x, y[u].x, z[u].x), f(x[u].y, y[u].y, z[u].y),
                                                      f(x[u].z, y[u].z, z[u].z), f(x[u].w, y[u].w, z[u].w));
  }
}

template <class F>
void register_elementwise(const char* op, Index rows, Index cols, int leaves,
                          ExprPtr (*build)(ExprPtr, ExprPtr, ExprPtr)) {
  const Index n = rows * cols;
  const double bytes = static_cast<double>(n) * sizeof(float) * (leaves + 1);
  const std::string sh = std::to_string(rows) + "x" + std::to_string(cols);
  const auto hand = [=](const DeviceMatrix<float>& A, const DeviceMatrix<float>& B, const DeviceMatrix<float>& C,
                        DeviceMatrix<float>& O) {
    const unsigned blocks = static_cast<unsigned>((n / 4 + 1023) / 1024);
    handwritten_kernel<<<blocks, 256, 0, A.stream().native()>>>(A.data(), B.data(), C.data(), O.data(), n / 4, F{});
  };
  benchmark::RegisterBenchmark(b::name(op, "f32", sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = b::random_matrix<float>(rows, cols, 1), B = b::random_matrix<float>(rows, cols, 2),
               C = b::random_matrix<float>(rows, cols, 3);
    DeviceMatrix<float> O(rows, cols), R(rows, cols);
    const Stream s = A.stream();
    const d::Program p = d::lower(*build(leaf(A), leaf(B), leaf(C)));
    d::run_elementwise(p, O.data(), cols, s);
    hand(A, B, C, R);
    if (!same_bits(O.to_vector(), R.to_vector())) return st.SkipWithError("not bitwise the hand-written kernel");
    b::time_on_stream(st, s.native(), bytes, b::kGBps, [&] {
      d::run_elementwise(d::lower(*build(leaf(A), leaf(B), leaf(C))), O.data(), cols, s);
    });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name(op, "f32", sh, "handwritten").c_str(), [=](benchmark::State& st) {
    const auto A = b::random_matrix<float>(rows, cols, 1), B = b::random_matrix<float>(rows, cols, 2),
               C = b::random_matrix<float>(rows, cols, 3);
    DeviceMatrix<float> O(rows, cols);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { hand(A, B, C, O); });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
}

ExprPtr build_e1(ExprPtr a, ExprPtr b, ExprPtr c) {
  return bin(ExprOp::sub, bin(ExprOp::div, bin(ExprOp::add, bin(ExprOp::mul, num(2.f), a), b), num(2.f)),
             un(ExprOp::abs, c));
}
ExprPtr build_e2(ExprPtr a, ExprPtr b, ExprPtr c) { return bin(ExprOp::sub, bin(ExprOp::add, a, b), c); }
ExprPtr build_e3(ExprPtr a, ExprPtr b, ExprPtr) {
  return un(ExprOp::sqrt, bin(ExprOp::add, un(ExprOp::square, a), un(ExprOp::square, b)));
}

// ------------------------------------------------------------------ 2D: broadcasts into a window
/// out(r, c) = A(r, c) + row(c) * col(r) - s, A and out windows of wider matrices.
__global__ void __launch_bounds__(256) bcast_kernel(const float* a, Index lda, const float* row, const float* col,
                                                    const float* s, float* out, Index ldo, Index rows, Index cols) {
  using namespace devmat::detail;
  const Index units = cols / 4;
  const float sv = *s;
  for (Index r = static_cast<Index>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows;
       r += static_cast<Index>(gridDim.y) * blockDim.y) {
    const float cv = col[r];
    for (Index u = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += static_cast<Index>(gridDim.x) * blockDim.x) {
      const float4 x = reinterpret_cast<const float4*>(a + r * lda)[u];
      const float4 w = reinterpret_cast<const float4*>(row)[u];
      const auto f = [&](float p, float q) { return op_sub(op_add(p, op_mul(q, cv)), sv); };
      reinterpret_cast<float4*>(out + r * ldo)[u] = make_float4(f(x.x, w.x), f(x.y, w.y), f(x.z, w.z), f(x.w, w.w));
    }
  }
}

void register_bcast(Index rows, Index cols) {
  const double bytes = 2.0 * static_cast<double>(rows) * cols * sizeof(float);
  const std::string sh = std::to_string(rows) + "x" + std::to_string(cols);
  struct Inputs {
    DeviceMatrix<float> big, row, col, s, out_big;
  };
  const auto make = [=] {
    Inputs in;
    in.big = b::random_matrix<float>(rows, 2 * cols, 1);
    in.row = b::random_matrix<float>(1, cols, 2);
    in.col = b::random_matrix<float>(rows, 1, 3);
    in.s = b::random_matrix<float>(1, 1, 4);
    in.out_big = DeviceMatrix<float>(rows, 2 * cols);
    return in;
  };
  const auto program = [=](const Inputs& in) {
    const ExprPtr e = bin(ExprOp::sub, bin(ExprOp::add, leaf(in.big.block(0, 0, rows, cols)),
                                           bin(ExprOp::mul, leaf(in.row), leaf(in.col))),
                          leaf(in.s));
    return d::lower(*e);
  };
  const auto hand = [=](const Inputs& in, float* out) {
    const dim3 block(64, 4);
    const dim3 grid(static_cast<unsigned>((cols / 4 + 63) / 64), static_cast<unsigned>(std::min<Index>((rows + 3) / 4, 65535)));
    bcast_kernel<<<grid, block, 0, in.big.stream().native()>>>(in.big.data(), 2 * cols, in.row.data(), in.col.data(),
                                                               in.s.data(), out, 2 * cols, rows, cols);
  };
  benchmark::RegisterBenchmark(b::name("expr_bcast_window", "f32", sh, "ours").c_str(), [=](benchmark::State& st) {
    Inputs in = make();
    DeviceMatrix<float> ref(rows, 2 * cols);
    const Stream s = in.big.stream();
    d::run_elementwise(program(in), in.out_big.data(), 2 * cols, s);
    hand(in, ref.data());
    if (!same_bits(DeviceMatrix<float>(in.out_big.block(0, 0, rows, cols)).to_vector(),
                   DeviceMatrix<float>(ref.block(0, 0, rows, cols)).to_vector()))
      return st.SkipWithError("not bitwise the hand-written kernel");
    b::time_on_stream(st, s.native(), bytes, b::kGBps,
                      [&] { d::run_elementwise(program(in), in.out_big.data(), 2 * cols, s); });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(b::name("expr_bcast_window", "f32", sh, "handwritten").c_str(), [=](benchmark::State& st) {
    Inputs in = make();
    b::time_on_stream(st, in.big.stream().native(), bytes, b::kGBps, [&] { hand(in, in.out_big.data()); });
  })->UseManualTime()->Unit(benchmark::kMicrosecond);
}

// ------------------------------------------------------------------ host cost of a cached evaluation
void register_host_cost() {
  benchmark::RegisterBenchmark("expr_host_cost/f32/256x256/ours", [](benchmark::State& st) {
    const auto A = b::random_matrix<float>(256, 256, 1), B = b::random_matrix<float>(256, 256, 2),
               C = b::random_matrix<float>(256, 256, 3);
    DeviceMatrix<float> O(256, 256);
    const Stream s = A.stream();
    d::run_elementwise(d::lower(*build_e1(leaf(A), leaf(B), leaf(C))), O.data(), 256, s);  // compiled
    s.synchronize();
    for (auto _ : st) {
      // Tree, lowering, lookup, launch: what a cached evaluation costs the host.
      d::run_elementwise(d::lower(*build_e1(leaf(A), leaf(B), leaf(C))), O.data(), 256, s);
    }
    s.synchronize();
  })->Unit(benchmark::kMicrosecond);
}

}  // namespace

int main(int argc, char** argv) {
  register_sum(16384, 16384);  // 2^28 floats: the target case
  register_sum(4096, 4096);
  register_elementwise<FE1>("expr_e1", 8192, 8192, 3, build_e1);
  register_elementwise<FE2>("expr_e2", 8192, 8192, 3, build_e2);
  register_elementwise<FE3>("expr_e3", 8192, 8192, 2, build_e3);
  register_bcast(4096, 4096);
  register_host_cost();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
