// Host cost of the steps of a cached expression evaluation that do not touch CUDA, on any machine
// (no GPU needed): building and dropping chain10's tree (bench_expr's expr-chain10 rows),
// lowering it, planning, filling the parameter block. The matrices are forged: their memory is a
// host array never read, kept by a shared owner as a real one is (the same atomic counts), with a
// stream handle that owns nothing. Prints nanoseconds per step, the mean of a hot loop and the
// median of single calls. Usage: expr_host_cost [iterations]
#include "detail/runtime.hpp"
#include "expr/node.hpp"
#include "expr/plan.hpp"
#include "expr/program.hpp"

#include <devmat/expr.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {
struct Forge {};
}  // namespace

// DeviceMatrix<U> is a friend of DeviceMatrix<T> and of Stream: a specialisation of it, local to
// this tool, can forge a matrix without a device.
template <>
class devmat::DeviceMatrix<Forge> {
 public:
  static DeviceMatrix<float> forge(float* data, Index rows, Index cols, const std::shared_ptr<void>& owner,
                                   const Stream& stream) {
    DeviceMatrix<float> m;
    m.rows_ = rows;
    m.cols_ = cols;
    m.data_ = data;
    // Aliasing: shares owner's count, points at a Buffer never made (nor dereferenced here).
    m.buf_ = std::shared_ptr<detail::Buffer>(owner, reinterpret_cast<detail::Buffer*>(data));
    m.stream_ = stream;
    return m;
  }
  static Stream stream() { return Stream(std::make_shared<Stream::Impl>()); }
  static Stream none() { return Stream(); }
  /// Leaves the matrix empty, so that its destructor frees nothing of the forged state twice.
  static void unforge(DeviceMatrix<float>& m) {
    m.buf_.reset();
    m.stream_ = Stream();
    m.data_ = nullptr;
    m.rows_ = m.cols_ = 0;
  }
};

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
namespace d = devmat::detail;
using Clock = std::chrono::steady_clock;

template <class M>
auto chain10(const M& A, const M& B) {  // bench_expr.cu's
  return min(cwise_product(sqrt(square(abs((A + B) * 0.5f - A)) + 1.0f), A) - B, 4.0f);
}

template <class Op>
void measure(const char* what, long iterations, Op op) {
  for (int i = 0; i < 1000; ++i) op();  // warm
  const auto t0 = Clock::now();
  for (long i = 0; i < iterations; ++i) op();
  const double loop_ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / iterations;
  std::vector<double> single(2001);
  for (double& ns : single) {
    const auto s0 = Clock::now();
    op();
    ns = std::chrono::duration<double, std::nano>(Clock::now() - s0).count();
  }
  std::nth_element(single.begin(), single.begin() + single.size() / 2, single.end());
  std::printf("  %-44s %8.1f ns (hot loop)  %8.1f ns (median single call)\n", what, loop_ns, single[single.size() / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 200000;
  constexpr Index n = 256;
  std::vector<float> a(n * n + 4), b(n * n + 4);  // + 4: 16-byte alignment below
  const auto align = [](float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(p) + 15) & ~std::uintptr_t(15));
  };
  const std::shared_ptr<void> owner_a = std::make_shared<int>(0), owner_b = std::make_shared<int>(0);
  const devmat::Stream s = DeviceMatrix<Forge>::stream();
  DeviceMatrix<float> A = DeviceMatrix<Forge>::forge(align(a.data()), n, n, owner_a, s);
  DeviceMatrix<float> B = DeviceMatrix<Forge>::forge(align(b.data()), n, n, owner_b, s);
  std::vector<float> r(n * n + 4);
  float* out = align(r.data());

  std::printf("expr host costs without CUDA (chain10 on 256x256 floats, %ld iterations):\n", iterations);
  measure("chain10 tree built and dropped", iterations, [&] {
    const auto e = chain10(A, B);
    asm volatile("" : : "r"(e.node().get()) : "memory");
  });
  {
    // The same tree over matrices whose memory and stream nobody owns: no atomic counts.
    DeviceMatrix<float> A0 = DeviceMatrix<Forge>::forge(align(a.data()), n, n, nullptr, DeviceMatrix<Forge>::none());
    DeviceMatrix<float> B0 = DeviceMatrix<Forge>::forge(align(b.data()), n, n, nullptr, DeviceMatrix<Forge>::none());
    measure("chain10 tree, no owners (no atomic counts)", iterations, [&] {
      const auto e = chain10(A0, B0);
      asm volatile("" : : "r"(e.node().get()) : "memory");
    });
    DeviceMatrix<Forge>::unforge(A0);
    DeviceMatrix<Forge>::unforge(B0);
  }
  measure("A + B tree built and dropped", iterations, [&] {
    const auto e = A + B;
    asm volatile("" : : "r"(e.node().get()) : "memory");
  });
  const auto e = chain10(A, B);
  d::Program p;
  measure("chain10 lowered (lower_into)", iterations, [&] {
    d::lower_into(*e.node(), p);
    asm volatile("" : : "r"(p.ops.data()) : "memory");
  });
  measure("chain10 planned (plan_elementwise)", iterations, [&] {
    const d::Plan plan = d::plan_elementwise(p, out, n, 132);
    asm volatile("" : : "r"(&plan) : "memory");
  });
  const d::Plan plan = d::plan_elementwise(p, out, n, 132);
  measure("chain10 parameter block (ParamBlock)", iterations, [&] {
    d::ParamBlock params(p, plan.head);
    asm volatile("" : : "r"(params.data()) : "memory");
  });
  measure("chain10 built, lowered, planned, dropped", iterations, [&] {
    const auto e2 = chain10(A, B);
    d::lower_into(*e2.node(), p);
    const d::Plan pl = d::plan_elementwise(p, out, n, 132);
    d::ParamBlock params(p, pl.head);
    asm volatile("" : : "r"(params.data()) : "memory");
  });
  std::printf("  program: %zu leaves, %zu scalars, %zu ops, code %zu bytes, parameters %zu bytes\n", p.leaves.size(),
              p.scalars.size(), p.ops.size(), p.code.size(), d::ParamBlock(p, plan.head).size());
  DeviceMatrix<Forge>::unforge(A);
  DeviceMatrix<Forge>::unforge(B);
  return 0;
}
