// The fused expression engine's generated kernels compile: every operation on every element type,
// every broadcast, through every kernel body (element-wise flat and 2D, sum / min / max on both
// paths, row and column sums, arg min / max), with NVRTC for sm_90, which needs no GPU. Also the
// plans' choices of path, and the disk cache's file format.
#include "support/catch.hpp"
#include "support/expr_trees.hpp"

#include "expr/codegen.hpp"
#include "expr/jit.hpp"
#include "expr/plan.hpp"

#include <devmat/error.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace devmat;
using namespace devmat::test::expr;
using detail::KernelKind;
using detail::KernelSpec;
using detail::Program;

namespace {

// Addresses only (nothing is read): 16-byte aligned, and one that is not.
alignas(16) unsigned char g_mem[4096];
const void* kAligned = g_mem;
const void* kOdd = g_mem + 4;

const detail::JitTarget kSm90{90, true};

std::string compile(const Program& p, const KernelSpec& s, const char* what) {
  const std::string src = detail::generate_source(p, s);
  double ms = 0;
  std::string image;
  CAPTURE(what, p.key);
  REQUIRE_NOTHROW(image = detail::jit_compile(src, kSm90, what, &ms));
  CHECK(image.size() > 0);
  std::printf("  %-28s %-18s %6.0f ms  %6zu bytes of cubin\n", what, detail::dtype_cxx(p.out_type), ms, image.size());
  return image;
}

KernelSpec spec(KernelKind k, bool flat = false, bool vec = false, bool outline = false, int min_blocks = 0) {
  KernelSpec s;
  s.kind = k;
  s.flat = flat;
  s.vec = vec;
  s.outline = outline;
  s.min_blocks = static_cast<std::uint8_t>(min_blocks);
  return s;
}

}  // namespace

TEST_CASE("every operation on every element type compiles through every kernel body") {
  std::printf("NVRTC %s, sm_90 cubins:\n", detail::nvrtc_version().c_str());
  for (DType t : kTypes) {
    const ExprPtr a = leaf(t, kAligned, 64, 48, 48), b = leaf(t, kAligned, 64, 48, 48);
    const ExprPtr m = leaf(DType::u8, kAligned, 64, 48, 48);
    const Program p = detail::lower(*all_ops(a, b, m));
    const bool heavy = detail::has_transcendental(p);
    CHECK(heavy == is_float(t));
    compile(p, spec(KernelKind::elementwise_flat), "elementwise flat");
    KernelSpec tail = spec(KernelKind::elementwise_flat);
    tail.tail = true;
    compile(p, tail, "elementwise flat, tail");
    compile(p, spec(KernelKind::elementwise_2d, false, true), "elementwise 2d vec");
    compile(p, spec(KernelKind::elementwise_2d), "elementwise 2d slots");
    compile(p, spec(KernelKind::reduce_sum, true, false, heavy, 8), "sum flat");
    compile(p, spec(KernelKind::reduce_min, false, true, heavy, 8), "min 2d vec");
    compile(p, spec(KernelKind::reduce_max, false, false, heavy), "max 2d");
    compile(p, spec(KernelKind::row_sums, false, false, heavy), "row_sums");
    compile(p, spec(KernelKind::col_sums, false, false, heavy), "col_sums");
    compile(p, spec(KernelKind::arg_max, true, false, heavy), "arg_max flat");
    compile(p, spec(KernelKind::arg_min, false, true, heavy), "arg_min 2d vec");
  }
}

TEST_CASE("broadcast leaves of every kind compile on the 2D paths, 1 x 1 leaves on the flat ones") {
  for (DType t : {DType::f32, DType::u8, DType::f64}) {
    const ExprPtr a = leaf(t, kAligned, 40, 24, 32), row = leaf(t, kAligned, 1, 24, 24);
    const ExprPtr col = leaf(t, kAligned, 40, 1, 8), one = leaf(t, kAligned, 1, 1, 1);
    const ExprPtr e = bin(ExprOp::sub, bin(ExprOp::add, a, bin(ExprOp::mul, row, col)), bin(ExprOp::max, one, scalar_of(t, 2)));
    const Program p = detail::lower(*e);
    REQUIRE(p.leaves.size() == 4);
    CHECK(p.leaves[1].bcast == Broadcast::rows);
    CHECK(p.leaves[2].bcast == Broadcast::cols);
    CHECK(p.leaves[3].bcast == Broadcast::both);
    compile(p, spec(KernelKind::elementwise_2d, false, false), "bcast elementwise 2d slots");
    compile(p, spec(KernelKind::elementwise_2d, false, true), "bcast elementwise 2d vec");
    compile(p, spec(KernelKind::reduce_sum, false, true, false, 8), "bcast sum 2d vec");
    compile(p, spec(KernelKind::row_sums), "bcast row_sums");
    compile(p, spec(KernelKind::col_sums), "bcast col_sums");
    const Program q = detail::lower(*bin(ExprOp::mul, a, one));
    compile(q, spec(KernelKind::elementwise_flat), "1x1 elementwise flat");
    compile(q, spec(KernelKind::reduce_sum, true, false, false, 8), "1x1 sum flat");
  }
}

TEST_CASE("a leaf alone, a scalar-only operand and many leaves compile") {
  const Program one = detail::lower(*leaf(DType::f32, kAligned, 10, 10, 10));
  compile(one, spec(KernelKind::elementwise_flat), "leaf alone");
  compile(one, spec(KernelKind::reduce_sum, true, false, false, 8), "leaf alone sum");
  std::vector<ExprPtr> leaves;
  ExprPtr acc = leaf(DType::f32, g_mem, 8, 8, 8);
  for (int k = 1; k < 40; ++k) acc = bin(ExprOp::add, acc, leaf(DType::f32, g_mem + 256 * k % 4096, 8, 8, 8));
  const Program many = detail::lower(*acc);
  CHECK(many.leaves.size() > 8);
  compile(many, spec(KernelKind::elementwise_2d, false, false), "many leaves 2d slots");
}

TEST_CASE("the plans pick the path from contiguity, broadcasting and alignment") {
  const auto prog = [](const void* a, Index stride, const void* b) {
    return detail::lower(*bin(ExprOp::add, leaf(DType::f32, a, 32, 20, stride), leaf(DType::f32, b, 32, 20, 20)));
  };
  SECTION("element-wise") {
    CHECK(detail::plan_elementwise(prog(kAligned, 20, kAligned), kAligned, 20, 0).spec.kind == KernelKind::elementwise_flat);
    // A strided window, an unaligned leaf, a strided or unaligned output: 2D.
    const detail::Plan strided = detail::plan_elementwise(prog(kAligned, 24, kAligned), kAligned, 20, 0);
    CHECK(strided.spec.kind == KernelKind::elementwise_2d);
    CHECK(strided.spec.vec);
    CHECK(detail::plan_elementwise(prog(kAligned, 22, kAligned), kAligned, 20, 0).spec.vec == false);  // rows not aligned
    CHECK(detail::plan_elementwise(prog(kOdd, 20, kAligned), kAligned, 20, 0).spec.kind == KernelKind::elementwise_2d);
    CHECK(detail::plan_elementwise(prog(kAligned, 20, kAligned), kOdd, 20, 0).spec.kind == KernelKind::elementwise_2d);
    CHECK(detail::plan_elementwise(prog(kAligned, 20, kAligned), kAligned, 24, 0).spec.kind == KernelKind::elementwise_2d);
    const detail::Plan flat = detail::plan_elementwise(prog(kAligned, 20, kAligned), kAligned, 20, 0);
    CHECK(flat.shape.gx == 1);  // 640 floats: 160 vectors, one block of 256 threads x 4
    CHECK(flat.head.units == 4);
  }
  SECTION("element-wise flat: small matrices take fewer units a thread, over more blocks") {
    const auto dense = [](Index rows, Index cols) {
      return detail::lower(*bin(ExprOp::add, leaf(DType::f32, kAligned, rows, cols, cols),
                                leaf(DType::f32, kAligned, rows, cols, cols)));
    };
    // 256 x 256 floats, 132 SMs: 16384 vectors; four a thread would be 16 blocks, one is 64.
    const detail::Plan small = detail::plan_elementwise(dense(256, 256), kAligned, 256, 132);
    CHECK(small.head.units == 1);
    CHECK(small.shape.gx == 64);
    // 1024 x 512: 131072 vectors; 128 blocks of four (< 264), so 512 of one.
    const detail::Plan mid = detail::plan_elementwise(dense(1024, 512), kAligned, 512, 132);
    CHECK(mid.head.units == 1);
    CHECK(mid.shape.gx == 512);
    // 1024 x 1056: 270336 vectors; 264 blocks of four: enough.
    const detail::Plan edge = detail::plan_elementwise(dense(1024, 1056), kAligned, 1056, 132);
    CHECK(edge.head.units == 4);
    CHECK(edge.shape.gx == 264);
    // 4096 x 4096: 4096 blocks of four cover every SM many times over.
    const detail::Plan big = detail::plan_elementwise(dense(4096, 4096), kAligned, 4096, 132);
    CHECK(big.head.units == 4);
    CHECK(big.shape.gx == 4096);
    // The kernel covers every vector: gx * 256 * units >= n / V.
    for (const detail::Plan* q : {&small, &mid, &edge, &big})
      CHECK(Index(q->shape.gx) * 256 * q->head.units * 4 >= q->head.n);
    // One unit a thread runs the kernel with only the one-unit loop, on 4 floats by default;
    // the full unroll runs the kernel with only its loop.
    CHECK(small.spec.vector == 4);
    CHECK(mid.spec.vector == 4);
    CHECK(edge.spec.vector == 0);
    CHECK(big.spec.vector == 0);
    CHECK(detail::generate_source(dense(256, 256), small.spec).find("expr_flat_body<devmat::detail::DEVMAT_EXPR_NS::Gen, 4, 1, false>") !=
          std::string::npos);
    CHECK(detail::generate_source(dense(4096, 4096), big.spec).find("expr_flat_body<devmat::detail::DEVMAT_EXPR_NS::Gen, 4, 4, false>") !=
          std::string::npos);
    // Narrower units where one a thread is taken: one or two floats, as many more blocks.
    const detail::Plan v1 = detail::plan_elementwise(dense(256, 256), kAligned, 256, 132, 1);
    CHECK(v1.spec.vector == 1);
    CHECK(v1.head.units == 1);
    CHECK(v1.shape.gx == 256);
    const detail::Plan v2 = detail::plan_elementwise(dense(257, 255), kAligned, 255, 132, 2);
    CHECK(v2.spec.vector == 2);
    CHECK(v2.shape.gx == 128);  // 65535 floats: 32767 pairs (block 0 takes the last float)
    // Only a count that is no multiple of the unit gets the tail's code.
    CHECK(v2.spec.tail);
    CHECK(!v1.spec.tail);
    for (const detail::Plan* q : {&small, &mid, &edge, &big}) CHECK(!q->spec.tail);
    const detail::Plan odd = detail::plan_elementwise(dense(61, 67), kAligned, 67, 132);
    CHECK(odd.spec.vector == 4);
    CHECK(odd.spec.tail);
    CHECK(detail::plan_elementwise(dense(4097, 4097), kAligned, 4097, 132).spec.tail);  // and a large one
    CHECK(detail::generate_source(dense(61, 67), odd.spec).find("expr_flat_body<devmat::detail::DEVMAT_EXPR_NS::Gen, 4, 1, true>") !=
          std::string::npos);
    CHECK(detail::generate_source(dense(256, 256), v1.spec).find("expr_flat_body<devmat::detail::DEVMAT_EXPR_NS::Gen, 1, 1, false>") !=
          std::string::npos);
    // The default width in the one-unit kernel: the same grid.
    const detail::Plan v4 = detail::plan_elementwise(dense(256, 256), kAligned, 256, 132, 4);
    CHECK(v4.spec.vector == 4);
    CHECK(v4.shape.gx == small.shape.gx);
    // Nothing changes where units of four a thread are taken; a width that is no power of two
    // up to the default vector keeps the default one.
    CHECK(detail::plan_elementwise(dense(4096, 4096), kAligned, 4096, 132, 1).spec.vector == 0);
    CHECK(detail::plan_elementwise(dense(256, 256), kAligned, 256, 132, 3).spec.vector == 4);
    CHECK(detail::plan_elementwise(dense(256, 256), kAligned, 256, 132, 8).spec.vector == 4);
    CHECK(!(v1.spec == small.spec));
  }
  SECTION("element-wise 2D rows not all aligned: the slot path") {
    // view + view of uint8 (bench_views): 16384 x 4095 at column 1 of 16384 x 8191, into a
    // dense 16384 x 4095 result: neither the leaves' rows nor the output's start aligned.
    const auto u8 = [](const void* a, Index stride) {
      return detail::lower(*bin(ExprOp::add, leaf(DType::u8, a, 16384, 4095, stride), leaf(DType::u8, a, 16384, 4095, stride)));
    };
    const detail::Plan view = detail::plan_elementwise(u8(g_mem + 1, 8191), kAligned, 4095, 0);
    CHECK(view.spec.kind == KernelKind::elementwise_2d);
    CHECK_FALSE(view.spec.vec);
    CHECK(view.head.chunk == 257);  // 4095 + 15 columns of slots of 16
    CHECK(view.shape.bx == 256);
    CHECK(view.shape.by == 1);
    CHECK(view.shape.gx == (16384 * 257 + 8 * 31 * 2 - 1) / (8 * 31 * 2));  // 8 warps of 2 runs of 31
    // Aligned output rows: no extra slot.
    CHECK(detail::plan_elementwise(u8(g_mem + 1, 8191), kAligned, 4096, 0).head.chunk == 256);
    // Aligned rows everywhere: the vector path.
    CHECK(detail::plan_elementwise(u8(kAligned, 8192), kAligned, 4096, 0).spec.vec);
  }
  SECTION("reductions take launch_reduce's grid") {
    const Program p = detail::lower(*bin(ExprOp::sub, leaf(DType::f32, kAligned, 1 << 14, 1 << 10, 1 << 10),
                                         leaf(DType::f32, kAligned, 1 << 14, 1 << 10, 1 << 10)));
    const detail::Plan big = detail::plan_reduce(p, detail::ReduceOp::sum, 1056, 8);
    CHECK(big.spec.flat);
    CHECK(big.shape.gx == 1056);  // 2^24 / 4096 = 4096 blocks, capped
    CHECK(big.second == detail::SecondPass::reduce);
    CHECK(big.partial_bytes == 1056 * 8);
    const Program small = detail::lower(*leaf(DType::f32, kAligned, 3, 5, 7));
    const detail::Plan one = detail::plan_reduce(small, detail::ReduceOp::mean, 1056, 8);
    CHECK(one.shape.gx == 1);
    CHECK(one.head.mode == detail::kExprMean);
    CHECK_FALSE(one.spec.flat);
    CHECK_FALSE(one.spec.vec);  // 5 columns: units of 4 straddle rows
  }
}

TEST_CASE("a program the generator cannot type is refused before NVRTC sees it") {
  const ExprPtr i = leaf(DType::i32, kAligned, 4, 4, 4);
  CHECK_THROWS_AS(detail::generate_source(detail::lower(*un(ExprOp::exp, i)), spec(KernelKind::elementwise_flat)),
                  std::logic_error);
}

TEST_CASE("an NVRTC error is a cuda_error with the log and the generated source") {
  try {
    detail::jit_compile("this is not CUDA;\n", kSm90, "a broken kernel");
    FAIL("no exception");
  } catch (const cuda_error& e) {
    const std::string what = e.what();
    CHECK(e.code() == cudaErrorInvalidSource);
    CHECK_THAT(what, devmat::test::contains("a broken kernel"));
    CHECK_THAT(what, devmat::test::contains("this is not CUDA"));
    CHECK_THAT(what, devmat::test::contains("error"));
  }
}

TEST_CASE("the disk cache returns what it stored, and ignores corrupt or foreign files") {
  char tmpl[] = "/tmp/devmat-expr-cache-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string dir = std::string(tmpl) + "/nested/dir";
  const detail::DiskCache cache(dir);
  REQUIRE(cache.enabled());
  const std::string id = "identity A", image(1000, '\x7f');
  std::string got;
  CHECK_FALSE(cache.load(id, got));
  CHECK(cache.store(id, image));
  CHECK(cache.load(id, got));
  CHECK(got == image);
  CHECK_FALSE(cache.load("identity B", got));
  {  // flip a byte of the image: the checksum fails
    std::fstream f(cache.path_of(id), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-20, std::ios::end);
    f.put('\x01');
  }
  CHECK_FALSE(cache.load(id, got));
  {  // truncated
    std::ofstream f(cache.path_of(id), std::ios::binary | std::ios::trunc);
    f << "DMXC0001";
  }
  CHECK_FALSE(cache.load(id, got));
  CHECK(cache.store(id, image));  // overwritten
  CHECK(cache.load(id, got));
  CHECK_FALSE(detail::DiskCache("off").enabled());
  CHECK_FALSE(detail::DiskCache("/proc/devmat-cannot-exist").enabled());
  std::system(("rm -rf " + std::string(tmpl)).c_str());
}

TEST_CASE("the slot path of uint8 and float views compiles without spills") {
  // What ptxas makes of the slot path (registers and spills of sm_90 cubins): view + view of
  // uint8 (bench_views' view-add), a longer uint8 expression with a broadcast row, and float.
  const auto check = [](const ExprPtr& e, const char* what) {
    const Program p = detail::lower(*e);
    std::string log;
    detail::jit_compile(detail::generate_source(p, spec(KernelKind::elementwise_2d)), kSm90, what, nullptr, &log);
    INFO(log);
    for (std::size_t pos = 0; (pos = log.find("Used", pos)) != std::string::npos; ++pos)
      std::printf("  %-36s %s\n", what, log.substr(pos, log.find('\n', pos) - pos).c_str());
    // ptxas reports spills on a "Function properties" line; one device run (ctest -j6) gave a
    // log without it for one of these kernels: no information is a warning, a spill a failure.
    const long spills = detail::spill_bytes(log);
    if (spills < 0) WARN(what << ": ptxas's log has no spill line:\n" << log);
    else CHECK(spills == 0);
  };
  const ExprPtr a = leaf(DType::u8, g_mem + 1, 64, 4095, 8191), b = leaf(DType::u8, g_mem + 2, 64, 4095, 8191);
  check(bin(ExprOp::add, a, b), "uint8 slots: a + b");
  const ExprPtr row = leaf(DType::u8, g_mem + 3, 1, 4095, 4095);
  check(bin(ExprOp::sub, bin(ExprOp::max, a, bin(ExprOp::mul, b, row)), bin(ExprOp::add, a, scalar<std::uint8_t>(7))),
        "uint8 slots: max(a, b * row) - (a + 7)");
  const ExprPtr f = leaf(DType::f32, g_mem + 4, 64, 1000, 1001), g = leaf(DType::f32, g_mem + 8, 64, 1000, 1003);
  check(bin(ExprOp::add, f, g), "float slots: f + g");
  const ExprPtr d = leaf(DType::f64, g_mem + 8, 64, 1000, 1001);
  check(bin(ExprOp::mul, d, cast(DType::f64, leaf(DType::u8, g_mem + 5, 64, 1000, 1001))), "double slots: d * double(u8)");
}

TEST_CASE("sum(square(A - B)) fits the unfused first pass's residency with no spills") {
  // The unfused reduce_kernel uses at most 32 registers on sm_90: 8 blocks of 256 per SM, the
  // grid cap. The fused kernel asks for the same (__launch_bounds__(256, 8)) so its fixed grid
  // runs in one wave; for this expression that must cost no spills.
  const ExprPtr a = leaf(DType::f32, kAligned, 1 << 14, 1 << 14, 1 << 14);
  const ExprPtr b = leaf(DType::f32, g_mem + 16, 1 << 14, 1 << 14, 1 << 14);
  const Program p = detail::lower(*un(ExprOp::square, bin(ExprOp::sub, a, b)));
  std::string log;
  detail::jit_compile(detail::generate_source(p, spec(KernelKind::reduce_sum, true, false, false, 8)), kSm90,
                      "sum(square(A - B))", nullptr, &log);
  INFO(log);
  CHECK(detail::spill_bytes(log) == 0);
  CHECK(detail::spill_bytes("no resource usage here") == -1);
  CHECK(detail::spill_bytes("    8 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
                            "    0 bytes stack frame, 4 bytes spill stores, 0 bytes spill loads") == 16);
}
