// The fused expression kernels run on the CPU: every generated source of the cases below is
// compiled with the host compiler against a small CUDA emulation (expr_emu/emu_cuda.hpp: a
// block's threads are host threads, so barriers and warp shuffles behave), loaded, and run
// through the very plans the engine launches (expr/plan.hpp). Checked:
// - element-wise results bit for bit against a reference that evaluates the tree straight from
//   its leaves (no lowering), on the flat and 2D paths (vector and slot), strided, broadcast,
//   unaligned (every leaf at its own offset, odd strides), with tails, with the output aliasing
//   a leaf, and that nothing around the output is written;
// - that no kernel reads a byte outside a leaf's rows (every load of a leaf is checked), as
//   memcheck and initcheck would see it on pitched or foreign memory;
// - sum, mean, min and max bit for bit (partials included) against the unfused path:
//   materialise the expression into a dense matrix, then the library's own reduce_kernel and
//   second pass (kernels/reduce.cuh) on the same grid;
// - row and column sums against sums in long double, arg min / max against a scan;
// - operation semantics at their edges against hand-written values.
// Needs no GPU; the operation functions are the ones NVRTC compiles (kernels/expr_ops.cuh),
// with the host's arithmetic.
#include "support/catch.hpp"
#include "support/expr_trees.hpp"

#include "expr/codegen.hpp"
#include "expr/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <unistd.h>

using namespace devmat;
using namespace devmat::test::expr;
using detail::KernelKind;
using detail::Plan;
using detail::Program;
using detail::ReduceOp;

namespace {

// ================================================================== host memory
/// Stable, aligned blocks of host memory; padding is poisoned so a wrong index shows.
class Arena {
 public:
  void* alloc(std::size_t bytes, unsigned char poison = 0xA5) {
    auto b = std::make_unique<std::vector<unsigned char>>(bytes + 128, poison);
    auto p = reinterpret_cast<std::uintptr_t>(b->data());
    void* aligned = reinterpret_cast<void*>((p + 63) / 64 * 64);
    blocks_.push_back(std::move(b));
    return aligned;
  }

 private:
  std::deque<std::unique_ptr<std::vector<unsigned char>>> blocks_;
};
Arena g_arena;
std::mt19937_64 g_rng(12345);

/// A rows x cols window (row stride `stride`, starting `offset` elements past a 64-byte
/// boundary) of random values of type t; the rest of the rows is poison.
ExprPtr matrix(DType t, Index rows, Index cols, Index stride, Index offset = 0, double lo = -4, double hi = 4) {
  const std::size_t size = detail::dtype_size(t);
  auto* base = static_cast<unsigned char*>(g_arena.alloc(static_cast<std::size_t>(offset + rows * stride + 1) * size));
  unsigned char* data = base + offset * size;
  std::uniform_real_distribution<double> u(lo, hi);
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < cols; ++c) {
      const double v = u(g_rng);
      detail::visit_dtype(t, [&](auto x) {
        using T = decltype(x);
        T val;
        if constexpr (std::is_floating_point_v<T>) val = static_cast<T>(v);
        else if constexpr (std::is_unsigned_v<T>) val = static_cast<T>(std::fabs(std::round(v * 9)));
        else val = static_cast<T>(std::round(v * 9));
        std::memcpy(data + (r * stride + c) * size, &val, size);
        return 0;
      });
    }
  return leaf(t, data, rows, cols, stride);
}

/// A 1 x n leaf holding `values`.
template <class T>
ExprPtr row_of(const std::vector<T>& values) {
  void* data = g_arena.alloc(values.size() * sizeof(T) + 1);
  std::memcpy(data, values.data(), values.size() * sizeof(T));
  const auto n = static_cast<Index>(values.size());
  return leaf(detail::dtype_of<T>::value, data, 1, n, n);
}
template <class T>
std::vector<unsigned long long> bits_of(const std::vector<T>& values) {
  std::vector<unsigned long long> b;
  for (T v : values) {
    unsigned long long x = 0;
    std::memcpy(&x, &v, sizeof(T));
    b.push_back(x);
  }
  return b;
}

/// Sets element (r, c) of a leaf.
template <class T>
void poke(const ExprPtr& l, Index r, Index c, T v) {
  std::memcpy(const_cast<unsigned char*>(static_cast<const unsigned char*>(l->data)) + (r * l->stride + c) * sizeof(T),
              &v, sizeof(T));
}

// ================================================================== the emulation library
struct EmuNode {  // emu_support.hpp's emu::Node
  int op, type, a, b, c;
  const void* data;
  long stride, rows, cols;
  unsigned long long bits;
};

std::vector<EmuNode> flatten(const ExprPtr& root) {
  std::vector<EmuNode> out;
  std::function<int(const ExprNode&)> visit = [&](const ExprNode& n) -> int {
    EmuNode e{static_cast<int>(n.op), static_cast<int>(n.type), -1, -1, -1, n.data, static_cast<long>(n.stride),
              static_cast<long>(n.rows), static_cast<long>(n.cols), n.bits};
    if (n.a) e.a = visit(*n.a);
    if (n.b) e.b = visit(*n.b);
    if (n.c) e.c = visit(*n.c);
    out.push_back(e);
    return static_cast<int>(out.size()) - 1;
  };
  visit(*root);
  return out;
}

std::string spec_tag(const detail::KernelSpec& s) {
  return std::to_string(static_cast<int>(s.kind)) + (s.flat ? "f" : "") + (s.vec ? "v" : "") + (s.outline ? "o" : "") +
         (s.vector ? "n" + std::to_string(s.vector) : "");
}

/// Collects the kernels the cases need, compiles them into one shared object, runs them.
class Emulator {
 public:
  /// The id of the kernel for (program, spec), registering it on first sight.
  int kernel(const Program& p, const detail::KernelSpec& s) {
    const std::string key = p.key + "#" + spec_tag(s);
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const int id = static_cast<int>(sources_.size());
    sources_.push_back(detail::generate_source(p, s));
    kinds_.push_back(s.kind);
    ids_.emplace(key, id);
    return id;
  }

  void build() {
    char tmpl[] = "/tmp/devmat-expr-emu-XXXXXX";
    if (!mkdtemp(tmpl)) FAIL("mkdtemp");
    dir_ = tmpl;
    {
      std::ofstream ops(dir_ + "/emu_ops.h");
      ops << "#pragma once\nenum : int {\n";
      const std::pair<const char*, ExprOp> names[] = {
          {"Leaf", ExprOp::leaf}, {"Scalar", ExprOp::scalar}, {"Neg", ExprOp::neg}, {"Abs", ExprOp::abs},
          {"Square", ExprOp::square}, {"Sqrt", ExprOp::sqrt}, {"Rsqrt", ExprOp::rsqrt}, {"Exp", ExprOp::exp},
          {"Log", ExprOp::log}, {"Log1p", ExprOp::log1p}, {"Expm1", ExprOp::expm1}, {"Sin", ExprOp::sin},
          {"Cos", ExprOp::cos}, {"Tanh", ExprOp::tanh}, {"Floor", ExprOp::floor}, {"Ceil", ExprOp::ceil},
          {"Round", ExprOp::round}, {"LogicalNot", ExprOp::logical_not}, {"Cast", ExprOp::cast}, {"Add", ExprOp::add},
          {"Sub", ExprOp::sub}, {"Mul", ExprOp::mul}, {"Div", ExprOp::div}, {"Min", ExprOp::min}, {"Max", ExprOp::max},
          {"Pow", ExprOp::pow}, {"Eq", ExprOp::eq}, {"Ne", ExprOp::ne}, {"Lt", ExprOp::lt}, {"Le", ExprOp::le},
          {"Gt", ExprOp::gt}, {"Ge", ExprOp::ge}, {"LogicalAnd", ExprOp::logical_and},
          {"LogicalOr", ExprOp::logical_or}, {"Select", ExprOp::select}};
      for (const auto& [n, op] : names) ops << "  kOp" << n << " = " << static_cast<int>(op) << ",\n";
      const std::pair<const char*, DType> types[] = {{"F32", DType::f32}, {"F64", DType::f64}, {"I32", DType::i32},
                                                     {"U8", DType::u8},   {"I64", DType::i64}, {"U64", DType::u64}};
      for (const auto& [n, t] : types) ops << "  k" << n << " = " << static_cast<int>(t) << ",\n";
      ops << "};\n";
    }
    // Two translation units, compiled side by side: the support, and the generated kernels.
    std::ofstream(dir_ + "/support.cpp") << "#include \"emu_support.hpp\"\n";
    {
      std::ofstream k(dir_ + "/kernels.cpp");
      k << "#include \"emu_cuda.hpp\"\n#include <cstdint>\n";
      for (std::size_t id = 0; id < sources_.size(); ++id) {
        const std::string n = std::to_string(id);
        k << "#define DEVMAT_EXPR_NS gen" << n << "\n#define DEVMAT_EXPR_KERNEL k" << n
          << "\n#define DEVMAT_EXPR_FINAL f" << n << "\n"
          << sources_[id] << "\n"
          << "extern \"C\" void emu_run_" << n
          << "(unsigned gx, unsigned gy, unsigned bx, unsigned by, const void* params) {\n"
          << "  const auto& p = *static_cast<const devmat::detail::gen" << n << "::Gen::Params*>(params);\n"
          << "  emu::launch(dim3(gx, gy), dim3(bx, by), [&] { k" << n << "(p); });\n}\n";
        if (kinds_[id] == KernelKind::arg_min || kinds_[id] == KernelKind::arg_max)
          k << "extern \"C\" void emu_fin_" << n << "(const void* v, const void* i, long count, long long* out) {\n"
            << "  using T = devmat::detail::gen" << n << "::Gen::Out;\n"
            << "  emu::launch(1, 256, [&] { f" << n
            << "(static_cast<const T*>(v), static_cast<const devmat::Index*>(i), count, out); });\n}\n";
        k << "#undef DEVMAT_EXPR_NS\n#undef DEVMAT_EXPR_KERNEL\n#undef DEVMAT_EXPR_FINAL\n";
      }
    }
    const std::string flags = std::string("-std=c++17 -O1 -fPIC -w -fno-strict-aliasing -fsanitize=undefined "
                                          "-fno-sanitize-recover=all -I") +
                              dir_ + " -I" DEVMAT_EMU_DIR " -I" DEVMAT_KERNELS_DIR;
    const std::string cxx = DEVMAT_EMU_CXX;
    const std::string cmd = "cd " + dir_ + " && (" + cxx + " " + flags + " -c support.cpp -o support.o & " + cxx + " " +
                            flags + " -c kernels.cpp -o kernels.o & wait) && " + cxx +
                            " -shared -fsanitize=undefined -o emu.so support.o kernels.o -lpthread";
    std::printf("emulation: compiling %zu generated kernels with %s\n", sources_.size(), cxx.c_str());
    std::fflush(stdout);
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::printf("emulation: compiled in %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    REQUIRE(access((dir_ + "/emu.so").c_str(), F_OK) == 0);
    handle_ = dlopen((dir_ + "/emu.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) FAIL(dlerror());
  }

  ~Emulator() {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }

  template <class F>
  F* sym(const std::string& name) const {
    void* s = dlsym(handle_, name.c_str());
    if (!s) throw std::runtime_error("emulation: no symbol " + name);
    return reinterpret_cast<F*>(s);
  }

  /// Runs a plan as the engine does (expr/engine.cpp's execute).
  void run(int id, const Program& p, Plan plan, void* out, std::vector<unsigned char>* partials_out = nullptr) const {
    if (plan.empty) return;
    if (plan.zero_bytes) {
      std::memset(out, 0, plan.zero_bytes);
      return;
    }
    std::vector<unsigned char> partials(plan.partial_bytes + 64);
    auto* part = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(partials.data()) + 63) / 64 * 64);
    if (plan.partial_bytes) {
      plan.head.out = part;
      plan.head.out2 = part + plan.index_offset;
    } else {
      plan.head.out = out;
    }
    detail::ParamBlock params(p, plan.head);
    // Every read of the kernel must lie within a leaf's rows.
    std::vector<long> windows;
    for (const detail::ProgramLeaf& l : p.leaves) {
      const long size = static_cast<long>(detail::dtype_size(l.type));
      long rows = static_cast<long>(l.node->rows), row_bytes = static_cast<long>(l.node->cols) * size;
      if (rows == 1 || l.stride == l.node->cols) {  // contiguous: one row (the flat path reads across rows)
        row_bytes *= rows;
        rows = 1;
      }
      windows.insert(windows.end(), {static_cast<long>(reinterpret_cast<std::uintptr_t>(l.data)), rows, row_bytes,
                                     rows > 1 ? static_cast<long>(l.stride) * size : row_bytes});
    }
    const auto readable = sym<long(const long*, int, char*)>("emu_readable");
    readable(windows.data(), static_cast<int>(p.leaves.size()), nullptr);
    sym<void(unsigned, unsigned, unsigned, unsigned, const void*)>("emu_run_" + std::to_string(id))(
        plan.shape.gx, plan.shape.gy, plan.shape.bx, plan.shape.by, params.data());
    char first_bad[256] = {};
    const long bad_reads = readable(nullptr, 0, first_bad);
    if (bad_reads > 0) FAIL_CHECK(bad_reads << " reads outside the leaves' rows; the first: " << first_bad);
    const int type = static_cast<int>(p.out_type);
    switch (plan.second) {
      case detail::SecondPass::none: break;
      case detail::SecondPass::reduce:
        sym<void(int, int, const void*, long, void*, double)>("emu_second_pass")(
            type, static_cast<int>(plan.op), part, static_cast<long>(plan.count), out, plan.head.count);
        break;
      case detail::SecondPass::row_chunks:
        sym<void(int, const void*, long, long, void*)>("emu_row_chunks")(type, part, static_cast<long>(plan.count),
                                                                          static_cast<long>(plan.chunks), out);
        break;
      case detail::SecondPass::col_chunks:
        sym<void(int, const void*, long, long, void*)>("emu_col_chunks")(type, part, static_cast<long>(plan.count),
                                                                          static_cast<long>(plan.chunks), out);
        break;
      case detail::SecondPass::arg:
        sym<void(const void*, const void*, long, long long*)>("emu_fin_" + std::to_string(id))(
            part, part + plan.index_offset, static_cast<long>(plan.count), static_cast<long long*>(out));
        break;
    }
    if (partials_out) partials_out->assign(part, part + plan.partial_bytes);
  }

  /// The reference value of the tree at (r, c): 8 bytes, the low ones in the root's type.
  unsigned long long reference(const std::vector<EmuNode>& nodes, Index r, Index c) const {
    unsigned long long v = 0;
    sym<void(const EmuNode*, int, long, long, void*)>("emu_reference")(nodes.data(), static_cast<int>(nodes.size()) - 1,
                                                                       static_cast<long>(r), static_cast<long>(c), &v);
    return v;
  }

  void plain_reduce(DType t, ReduceOp op, const void* in, Index n, unsigned grid, void* partials, void* out) const {
    sym<void(int, int, const void*, long, unsigned, void*, void*)>("emu_plain_reduce")(
        static_cast<int>(t), static_cast<int>(op), in, static_cast<long>(n), grid, partials, out);
  }

 private:
  std::vector<std::string> sources_;
  std::vector<KernelKind> kinds_;
  std::map<std::string, int> ids_;
  std::string dir_;
  void* handle_ = nullptr;
};

// ================================================================== the cases
enum class What { elementwise, sum, mean, min, max, row_sums, col_sums, arg_min, arg_max };

struct Case {
  std::string name;
  ExprPtr tree;
  What what;
  // element-wise output: row stride, offset (elements past 64-byte alignment); or the leaf it
  // aliases (its window is the output)
  Index ld_out = 0, out_offset = 0;
  ExprPtr alias;
  long long cap = 0;   // reductions: the grid cap (the unfused first pass's residency)
  int sm_count = 0;    // row / column sums, arg
  std::vector<unsigned long long> expect;  // element-wise: hand-written values (bits), row-major
  unsigned grid = 0;  // > 0: this many blocks instead of the plan's (grid-stride loops)
  int small_vector = 0;  // element-wise: plan_elementwise's small_vector (narrower units)
  // filled by prepare():
  Program program;
  Plan plan;
  int kernel = -1;
};

/// Every case, with its plan and kernel registered in `emu`.
std::vector<Case>& cases(Emulator& emu) {
  static std::vector<Case> all = [&] {
    std::vector<Case> v;
    const auto add = [&](Case c) { v.push_back(std::move(c)); };

    // ---- element-wise: paths, strides, broadcasts, alignment, tails, aliasing
    {
      const ExprPtr a = matrix(DType::f32, 61, 67, 67), b = matrix(DType::f32, 61, 67, 67),
                    c = matrix(DType::f32, 61, 67, 67), s = matrix(DType::f32, 1, 1, 1);
      const ExprPtr e1 = bin(ExprOp::add,
                             bin(ExprOp::sub, bin(ExprOp::div, bin(ExprOp::add, bin(ExprOp::mul, scalar(2.f), a), b), scalar(2.f)),
                                 un(ExprOp::abs, c)),
                             s);
      add({"E1 flat", e1, What::elementwise, 67});
      {  // fewer units a thread than the unroll (a small matrix on many SMs)
        Case c{"E1 flat, one unit a thread", e1, What::elementwise, 67};
        c.sm_count = 132;
        add(c);
        c.name = "E1 flat, one unit a thread, two blocks striding";
        c.grid = 2;
        add(c);
        // Narrower units in the one-unit kernel (61 x 67 = 4087 elements: tails of 3, 1, none).
        for (int v : {1, 2, 4}) {
          Case n{"E1 flat, " + std::to_string(v) + "-element units", e1, What::elementwise, 67};
          n.sm_count = 132;
          n.small_vector = v;
          add(n);
          n.name += ", two blocks striding";
          n.grid = 2;
          add(n);
        }
      }
      add({"E1 into a strided output", e1, What::elementwise, 72});
      add({"E1 into an unaligned output", e1, What::elementwise, 67, 1});
      add({"E1 into its own operand a", e1, What::elementwise, 0, 0, a});
    }
    {
      const ExprPtr a = matrix(DType::f32, 33, 40, 48), row = matrix(DType::f32, 1, 40, 40);
      const ExprPtr col = matrix(DType::f32, 33, 1, 5), one = matrix(DType::f32, 1, 1, 1);
      const ExprPtr e = bin(ExprOp::sub, bin(ExprOp::add, a, bin(ExprOp::mul, row, col)), bin(ExprOp::max, one, scalar(0.5f)));
      add({"broadcasts, aligned rows", e, What::elementwise, 44});
      add({"broadcasts, odd output stride", e, What::elementwise, 41});
      const ExprPtr au = matrix(DType::f32, 33, 40, 47, 1), rowu = matrix(DType::f32, 1, 40, 40, 3);
      add({"broadcasts, unaligned leaves", bin(ExprOp::mul, bin(ExprOp::add, au, rowu), col), What::elementwise, 40});
      add({"into a strided operand", bin(ExprOp::add, a, bin(ExprOp::mul, row, col)), What::elementwise, 0, 0, a});
      add({"a single column", bin(ExprOp::mul, col, scalar(3.f)), What::elementwise, 1});
      add({"a single row", bin(ExprOp::add, row, one), What::elementwise, 40});
    }
    {
      const ExprPtr u = matrix(DType::u8, 29, 45, 45), d = matrix(DType::f64, 29, 45, 45), i = matrix(DType::i32, 29, 45, 45);
      const ExprPtr mixed = bin(ExprOp::add, bin(ExprOp::mul, cast(DType::f32, u), cast(DType::f32, d)), cast(DType::f32, i));
      add({"mixed types flat", mixed, What::elementwise, 45});
      {  // narrower units: the u8 leaf loads one or two bytes, the f64 one 8 or 16
        Case n{"mixed types flat, 1-element units", mixed, What::elementwise, 45};
        n.sm_count = 132;
        n.small_vector = 1;
        add(n);
      }
      add({"mixed types 2d", mixed, What::elementwise, 46});
    }
    for (DType t : kTypes) {
      const ExprPtr a = matrix(t, 19, 23, 23), b = matrix(t, 19, 23, 23), m = matrix(DType::u8, 19, 23, 23);
      const ExprPtr e = all_ops(a, b, m);
      add({std::string("every op, ") + detail::dtype_name(t) + ", flat", e, What::elementwise, 23});
      const ExprPtr as = matrix(t, 19, 23, 32, 2), bs = matrix(t, 1, 23, 23);
      add({std::string("every op, ") + detail::dtype_name(t) + ", strided and broadcast", all_ops(as, bs, m),
           What::elementwise, 25});
    }
    {
      const ExprPtr a = matrix(DType::u8, 17, 50, 50), b = matrix(DType::u8, 17, 50, 50);
      const ExprPtr e = bin(ExprOp::add, bin(ExprOp::mul, a, b), bin(ExprOp::max, a, scalar<std::uint8_t>(200)));
      add({"uint8, 16-element vectors", e, What::elementwise, 50});
      add({"uint8, 16-element vectors, 2d", e, What::elementwise, 64});
    }

    // ---- the 2D slot path: rows at every alignment (odd strides), each leaf at its own
    for (DType t : {DType::u8, DType::f32, DType::f64, DType::i32}) {
      const std::string tn = detail::dtype_name(t);
      const ExprPtr k3 = scalar_of(t, 3);
      for (Index cols : {1, 2, 3, 15, 16, 17, 33, 100, 1001}) {
        const Index rows = cols > 100 ? 7 : 23;
        const std::string w = ", " + std::to_string(cols) + " wide";
        // Strides 2 cols + 1 and cols + 5 (odd for odd cols), offsets 1 and 6: every row of each
        // leaf at its own offset within 16 bytes.
        const ExprPtr a = matrix(t, rows, cols, 2 * cols + 1, 1), b = matrix(t, rows, cols, cols + 5, 6);
        const ExprPtr e = bin(ExprOp::sub, bin(ExprOp::add, a, bin(ExprOp::mul, b, k3)), bin(ExprOp::max, a, b));
        add({"slots " + tn + w + ", odd strides, dense unaligned output", e, What::elementwise, cols, 3});
        add({"slots " + tn + w + ", odd strides, strided output", e, What::elementwise, cols + 7, 0});
        add({"slots " + tn + w + ", in place on an odd-stride window", e, What::elementwise, 0, 0, a});
        const ExprPtr row = matrix(t, 1, cols, cols, 7), col = matrix(t, rows, 1, 3, 2), one = matrix(t, 1, 1, 1, 5);
        const ExprPtr eb = bin(ExprOp::sub, bin(ExprOp::add, a, bin(ExprOp::mul, row, col)), bin(ExprOp::max, one, k3));
        add({"slots " + tn + w + ", row, column and 1 x 1 broadcasts", eb, What::elementwise, cols + 1, 1});
        add({"slots " + tn + w + ", broadcasts in place", eb, What::elementwise, 0, 0, a});
      }
      {  // one row, starting past a boundary; a leaf that is read twice; five leaves at five offsets
        const ExprPtr a = matrix(t, 1, 77, 77, 3), b = matrix(t, 1, 77, 77, 10);
        add({"slots " + tn + ", one row", bin(ExprOp::add, bin(ExprOp::mul, a, a), b), What::elementwise, 77, 1});
        ExprPtr acc = matrix(t, 19, 45, 47, 0);
        for (Index k = 1; k < 5; ++k) acc = bin(ExprOp::add, acc, matrix(t, 19, 45, 45 + 2 * k + 1, k));
        add({"slots " + tn + ", five leaves at five offsets", acc, What::elementwise, 51, 2});
      }
    }
    {  // long rows: view-add u8 of bench_views (4095 of a row of 8191 at column 1), fewer rows
      const ExprPtr a = matrix(DType::u8, 21, 4095, 8191, 1), b = matrix(DType::u8, 21, 4095, 8191, 1);
      add({"slots uint8, view + view, 4095 of 8191 at column 1", bin(ExprOp::add, a, b), What::elementwise, 4095});
      add({"slots uint8, view + view in place", bin(ExprOp::add, a, b), What::elementwise, 0, 0, a});
      const ExprPtr f = matrix(DType::f32, 9, 1003, 2051, 3), g = matrix(DType::f32, 9, 1003, 1003, 2);
      add({"slots float, long rows", bin(ExprOp::mul, f, g), What::elementwise, 1003, 1});
      // Fewer blocks than units: the grid strides, a warp takes several runs.
      Case strided{"slots uint8, view + view, 2 blocks", bin(ExprOp::add, a, b), What::elementwise, 4095, 1};
      strided.grid = 2;
      add(strided);
      add({"slots: scalars only, into an unaligned 1 x 1", bin(ExprOp::mul, scalar(2.5f), scalar(3.f)),
           What::elementwise, 1, 1});
      const ExprPtr s3 = matrix(DType::u8, 700, 3, 5, 1), t3 = matrix(DType::u8, 700, 3, 7, 2);
      Case narrow{"slots uint8, 700 rows of 3, 1 block", bin(ExprOp::sub, s3, t3), What::elementwise, 3, 0};
      narrow.grid = 1;
      add(narrow);
    }
    {  // leaves narrower than the widest type: chunks of 2 (uint8 in double), 4 (uint8 in float)
       // and 8 bytes (int32 in double)
      for (Index cols : {1, 5, 16, 61}) {
        const std::string w = ", " + std::to_string(cols) + " wide";
        const ExprPtr u = matrix(DType::u8, 13, cols, 2 * cols + 3, 1), v = matrix(DType::u8, 13, cols, cols + 1, 2);
        const ExprPtr d = matrix(DType::f64, 13, cols, cols + 2, 1), i = matrix(DType::i32, 13, cols, cols + 3, 3);
        const ExprPtr x = matrix(DType::f32, 13, cols, 3 * cols + 1, 1);
        add({"slots uint8 in double" + w, bin(ExprOp::add, cast(DType::f64, u), bin(ExprOp::mul, d, cast(DType::f64, v))),
             What::elementwise, cols + 1, 1});
        add({"slots uint8 in float" + w, bin(ExprOp::sub, cast(DType::f32, u), x), What::elementwise, cols, 2});
        add({"slots int32 and float in double, into uint8" + w,
             cast(DType::u8, bin(ExprOp::add, cast(DType::f64, i), bin(ExprOp::add, d, cast(DType::f64, x)))),
             What::elementwise, cols + 2, 5});
        add({"slots uint8 mask selects floats" + w, sel(u, x, scalar(2.f)), What::elementwise, cols, 0});
      }
    }

    // ---- semantics at the edges, against hand-written values
    {
      using I = std::int32_t;
      constexpr I kMin = std::numeric_limits<I>::min(), kMax = std::numeric_limits<I>::max();
      const ExprPtr a = row_of<I>({kMin, 7, -7, 5, kMax, 65536}), b = row_of<I>({-1, 0, 2, -2, 1, 65536});
      const auto e = [&](const char* n, ExprPtr t, std::vector<I> want) {
        Case c{n, std::move(t), What::elementwise, 6};
        c.expect = bits_of(want);
        return c;
      };
      add(e("int32 division: INT_MIN / -1 wraps, / 0 gives 0, truncates", bin(ExprOp::div, a, b),
            {kMin, 0, -3, -2, kMax, 1}));
      add(e("int32 + and * wrap", bin(ExprOp::add, a, b), {kMax, 7, -5, 3, kMin, 131072}));
      add(e("int32 * wraps", bin(ExprOp::mul, a, b), {kMin, 0, -14, -10, kMax, 0}));
      add(e("int32 - and abs of INT_MIN wrap", bin(ExprOp::sub, un(ExprOp::neg, a), un(ExprOp::abs, a)),
            {0, -14, 0, -10, 2, -131072}));  // -2 INT_MAX wraps to 2
      add(e("int32 min / max", bin(ExprOp::sub, bin(ExprOp::max, a, b), bin(ExprOp::min, a, b)),
            {kMax, 7, 9, 7, kMax - 1, 0}));
    }
    {
      using U = std::uint8_t;
      const ExprPtr a = row_of<U>({200, 3, 16, 1, 7, 255}), b = row_of<U>({100, 5, 17, 0, 0, 255});
      const auto e = [&](const char* n, ExprPtr t, std::vector<U> want) {
        Case c{n, std::move(t), What::elementwise, 6};
        c.expect = bits_of(want);
        return c;
      };
      add(e("uint8 + wraps", bin(ExprOp::add, a, b), {44, 8, 33, 1, 7, 254}));
      add(e("uint8 - wraps", bin(ExprOp::sub, a, b), {100, 254, 255, 1, 7, 0}));
      add(e("uint8 * wraps", bin(ExprOp::mul, a, b), {32, 15, 16, 0, 0, 1}));
      add(e("uint8 / 0 gives 0", bin(ExprOp::div, a, b), {2, 0, 0, 0, 0, 1}));
      add(e("uint8 - x wraps, abs is x", bin(ExprOp::add, un(ExprOp::neg, a), un(ExprOp::abs, a)), {0, 0, 0, 0, 0, 0}));
      add(e("logic on masks", bin(ExprOp::add, bin(ExprOp::logical_and, a, b, DType::u8),
                                   bin(ExprOp::mul, bin(ExprOp::logical_or, b, b, DType::u8), un(ExprOp::logical_not, a, DType::u8))),
            {1, 1, 1, 0, 0, 1}));
    }
    {
      const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
      const ExprPtr a = row_of<float>({nan, 1.f, -0.f, 2.5f, -2.5f, 0.5f, 300.7f, -5.f, 3.5f, 3e9f});
      const ExprPtr b = row_of<float>({1.f, nan, 0.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f, 1.f});
      const auto e = [&](const char* n, ExprPtr t, auto want) {
        Case c{n, std::move(t), What::elementwise, 10};
        c.expect = bits_of(want);
        return c;
      };
      using F = std::vector<float>;
      add(e("float min propagates NaN", bin(ExprOp::min, a, b), F{nan, nan, 0.f, 1.f, -2.5f, 0.5f, 1.f, -5.f, 1.f, 1.f}));
      add(e("float max propagates NaN", bin(ExprOp::max, a, b), F{nan, nan, 0.f, 2.5f, 1.f, 1.f, 300.7f, 1.f, 3.5f, 3e9f}));
      add(e("abs(-0) is -0 (DeviceMatrix::abs)", un(ExprOp::abs, a), F{nan, 1.f, -0.f, 2.5f, 2.5f, 0.5f, 300.7f, 5.f, 3.5f, 3e9f}));
      add(e("round: half away from zero", un(ExprOp::round, a), F{nan, 1.f, -0.f, 3.f, -3.f, 1.f, 301.f, -5.f, 4.f, 3e9f}));
      using U8 = std::vector<std::uint8_t>;
      add(e("cast float -> uint8 rounds to even and saturates, NaN -> 0", cast(DType::u8, a),
            U8{0, 1, 0, 2, 0, 0, 255, 0, 4, 255}));
      using I32 = std::vector<std::int32_t>;
      add(e("cast float -> int32 saturates", cast(DType::i32, a),
            I32{0, 1, 0, 2, -2, 0, 301, -5, 4, std::numeric_limits<std::int32_t>::max()}));
      add(e("comparisons with NaN", bin(ExprOp::add, bin(ExprOp::eq, a, a, DType::u8),
                                        bin(ExprOp::mul, bin(ExprOp::ne, a, a, DType::u8), scalar<std::uint8_t>(2))),
            U8{2, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
      add(e("select on a float mask (-0 is zero)", sel(a, scalar(7.f), b), F{7.f, 7.f, 0.f, 7.f, 7.f, 7.f, 7.f, 7.f, 7.f, 7.f}));
      (void)inf;
    }
    {
      const ExprPtr i = row_of<std::int64_t>({-1, 300, std::numeric_limits<std::int64_t>::min(), 5});
      const ExprPtr u = row_of<std::uint64_t>({~0ull, 300, 1ull << 63, 5});
      const auto e = [&](const char* n, ExprPtr t, auto want) {
        Case c{n, std::move(t), What::elementwise, 4};
        c.expect = bits_of(want);
        return c;
      };
      add(e("cast int64 -> uint8 clamps", cast(DType::u8, i), std::vector<std::uint8_t>{0, 255, 0, 5}));
      add(e("cast int64 -> uint64 clamps negatives to 0", cast(DType::u64, i),
            std::vector<std::uint64_t>{0, 300, 0, 5}));
      add(e("cast uint64 -> int64 saturates", cast(DType::i64, u),
            std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max(), 300,
                                      std::numeric_limits<std::int64_t>::max(), 5}));
      add(e("cast uint64 -> int32 saturates", cast(DType::i32, u),
            std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(), 300,
                                      std::numeric_limits<std::int32_t>::max(), 5}));
    }

    // ---- whole reductions: every type, flat / 2D vec / 2D straddling / one block / empty
    for (DType t : kTypes) {
      const std::string tn = detail::dtype_name(t);
      const ExprPtr a = matrix(t, 300, 257, 257), b = matrix(t, 300, 257, 257);
      const ExprPtr e = bin(ExprOp::add, bin(ExprOp::mul, a, b), a);
      const ExprPtr ef = bin(ExprOp::sub, matrix(t, 96, 111, 111), scalar_of(t, 1));  // grid from n: 1 to 6 blocks
      const ExprPtr w = matrix(t, 37, 256, 272), w2 = matrix(t, 37, 256, 272);
      const ExprPtr ew = bin(ExprOp::sub, w, w2);
      const ExprPtr s = matrix(t, 141, 37, 40, 1);
      const ExprPtr es = bin(ExprOp::mul, s, scalar_of(t, 3));
      const ExprPtr tiny = bin(ExprOp::add, matrix(t, 3, 5, 5), scalar_of(t, 1));
      for (What what : {What::sum, What::mean, What::min, What::max}) {
        const std::string wn = what == What::sum ? "sum" : what == What::mean ? "mean" : what == What::min ? "min" : "max";
        add({wn + " " + tn + " flat, capped grid", e, what, 0, 0, nullptr, 7});
        add({wn + " " + tn + " flat, uncapped grid", ef, what, 0, 0, nullptr, 1 << 20});
        add({wn + " " + tn + " 2d vec", ew, what, 0, 0, nullptr, 5});
        add({wn + " " + tn + " 2d straddling rows", es, what, 0, 0, nullptr, 3});
        add({wn + " " + tn + " one block", tiny, what, 0, 0, nullptr, 8});
      }
      add({"sum " + tn + " empty", bin(ExprOp::add, matrix(t, 0, 5, 5), scalar_of(t, 1)), What::sum, 0, 0, nullptr, 8});
    }
    {
      const ExprPtr a = matrix(DType::f32, 200, 64, 64), b = matrix(DType::f32, 200, 64, 64);
      poke(a, 100, 7, std::numeric_limits<float>::quiet_NaN());
      const ExprPtr e = un(ExprOp::square, bin(ExprOp::sub, a, b));
      for (What what : {What::sum, What::min, What::max}) add({"NaN in sum / min / max", e, what, 0, 0, nullptr, 6});
      const ExprPtr tr = bin(ExprOp::add, un(ExprOp::exp, un(ExprOp::neg, un(ExprOp::square, a))), un(ExprOp::tanh, b));
      add({"transcendental sum (outlined)", tr, What::sum, 0, 0, nullptr, 6});
      const ExprPtr row = matrix(DType::f32, 1, 64, 64), col = matrix(DType::f32, 200, 1, 3);
      add({"broadcast sum", bin(ExprOp::mul, bin(ExprOp::sub, a, row), col), What::sum, 0, 0, nullptr, 9});
      add({"count: sum of a mask", bin(ExprOp::gt, matrix(DType::f32, 300, 257, 257), scalar(0.5f), DType::u8), What::sum,
           0, 0, nullptr, 9});
    }

    // ---- row and column sums
    for (DType t : {DType::f32, DType::f64, DType::i32, DType::u8}) {
      const std::string tn = detail::dtype_name(t);
      const ExprPtr a = matrix(t, 50, 30, 33), b = matrix(t, 1, 30, 30);
      add({"row_sums " + tn + " teams", bin(ExprOp::add, a, b), What::row_sums, 0, 0, nullptr, 0, 4});
      add({"row_sums " + tn + " short rows", matrix(t, 9, 3, 3), What::row_sums, 0, 0, nullptr, 0, 4});
      add({"row_sums " + tn + " split rows", bin(ExprOp::mul, matrix(t, 3, 20000, 20000), scalar_of(t, 2)),
           What::row_sums, 0, 0, nullptr, 0, 4});
      add({"row_sums " + tn + " a block a row", matrix(t, 9, 9000, 9001, 1), What::row_sums, 0, 0, nullptr, 0, 1});
      add({"col_sums " + tn + " row chunks", bin(ExprOp::sub, matrix(t, 300, 45, 47), matrix(t, 300, 1, 2)),
           What::col_sums, 0, 0, nullptr, 0, 2});
      add({"col_sums " + tn + " one chunk", matrix(t, 7, 70, 70), What::col_sums, 0, 0, nullptr, 0, 64});
    }
    add({"row_sums empty rows", matrix(DType::f32, 4, 0, 1), What::row_sums, 0, 0, nullptr, 0, 4});
    add({"col_sums empty columns", matrix(DType::f32, 0, 4, 4), What::col_sums, 0, 0, nullptr, 0, 4});

    // ---- arg min / max: ties, NaN, every path
    for (DType t : kTypes) {
      const std::string tn = detail::dtype_name(t);
      const ExprPtr a = matrix(t, 120, 77, 77);
      add({"arg_max " + tn + " flat", bin(ExprOp::add, a, scalar_of(t, 1)), What::arg_max, 0, 0, nullptr, 0, 2});
      add({"arg_min " + tn + " flat", a, What::arg_min, 0, 0, nullptr, 0, 2});
      const ExprPtr s = matrix(t, 70, 33, 35, 1);
      add({"arg_max " + tn + " 2d", s, What::arg_max, 0, 0, nullptr, 0, 1});
      add({"arg_min " + tn + " 2d one block", matrix(t, 5, 9, 9), What::arg_min, 0, 0, nullptr, 0, 1});
    }
    {
      const ExprPtr a = matrix(DType::f32, 90, 64, 64);
      poke(a, 50, 3, std::numeric_limits<float>::quiet_NaN());
      poke(a, 70, 9, std::numeric_limits<float>::quiet_NaN());
      add({"arg_max with NaN", a, What::arg_max, 0, 0, nullptr, 0, 2});
      add({"arg_min with NaN", a, What::arg_min, 0, 0, nullptr, 0, 2});
      const ExprPtr ties = bin(ExprOp::min, matrix(DType::f32, 90, 64, 64), scalar(-1.f));  // all -1 but smaller ones
      add({"arg_max ties", ties, What::arg_max, 0, 0, nullptr, 0, 2});
    }

    // plans and kernels
    for (Case& c : v) {
      c.program = detail::lower(*c.tree);
      const Program& p = c.program;
      switch (c.what) {
        case What::elementwise: {
          const void* out = c.alias ? c.alias->data : nullptr;
          Index ld = c.alias ? c.alias->stride : c.ld_out;
          if (!out) out = static_cast<unsigned char*>(g_arena.alloc(1)) + c.out_offset * detail::dtype_size(p.out_type);
          c.ld_out = ld;
          c.plan = detail::plan_elementwise(p, out, ld, c.sm_count, c.small_vector);
          if (c.grid) c.plan.shape.gx = c.grid;
          break;
        }
        case What::sum: c.plan = detail::plan_reduce(p, ReduceOp::sum, c.cap, 8); break;
        case What::mean: c.plan = detail::plan_reduce(p, ReduceOp::mean, c.cap, 8); break;
        case What::min: c.plan = detail::plan_reduce(p, ReduceOp::min, c.cap, 8); break;
        case What::max: c.plan = detail::plan_reduce(p, ReduceOp::max, c.cap, 8); break;
        case What::row_sums: c.plan = detail::plan_row_sums(p, c.sm_count); break;
        case What::col_sums: c.plan = detail::plan_col_sums(p, c.sm_count); break;
        case What::arg_min: c.plan = detail::plan_arg(p, false, c.sm_count); break;
        case What::arg_max: c.plan = detail::plan_arg(p, true, c.sm_count); break;
      }
      if (!c.plan.empty && !c.plan.zero_bytes) c.kernel = emu.kernel(p, c.plan.spec);
    }
    return v;
  }();
  return all;
}

Emulator& emulator() {
  static Emulator emu;
  static bool built = false;
  if (!built) {
    cases(emu);
    emu.build();
    built = true;
  }
  return emu;
}

std::string hex(unsigned long long v, std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%0*llx", static_cast<int>(2 * bytes), v & (bytes == 8 ? ~0ull : ((1ull << (8 * bytes)) - 1)));
  return buf;
}

// ================================================================== checks
void check_elementwise(const Emulator& emu, Case& c) {
  const Program& p = c.program;
  if (c.small_vector) {  // the narrow kernel, not the default one, is what runs
    INFO(c.name);
    CHECK(c.plan.spec.vector == c.small_vector);
  }
  const std::size_t size = detail::dtype_size(p.out_type);
  const Index rows = p.rows, cols = p.cols, ld = c.ld_out;
  const std::vector<EmuNode> nodes = flatten(c.tree);
  // Expected values first (an aliased output overwrites its operand).
  std::vector<unsigned long long> want(static_cast<std::size_t>(rows * cols));
  for (Index r = 0; r < rows; ++r)
    for (Index k = 0; k < cols; ++k) want[static_cast<std::size_t>(r * cols + k)] = emu.reference(nodes, r, k);
  // The output: its own poisoned buffer (window plus margins), or the aliased leaf.
  const std::size_t span = static_cast<std::size_t>((rows - 1) * ld + cols) * size;
  std::vector<unsigned char> before;
  unsigned char* out;
  if (c.alias) {
    out = const_cast<unsigned char*>(static_cast<const unsigned char*>(c.alias->data));
  } else {
    out = static_cast<unsigned char*>(g_arena.alloc(span + 256, 0xCD)) + c.out_offset * size;
    before.assign(out - c.out_offset * size, out + span + 128);
  }
  emu.run(c.kernel, p, c.plan, out);
  int bad = 0;
  for (Index r = 0; r < rows && bad < 5; ++r)
    for (Index k = 0; k < cols && bad < 5; ++k) {
      unsigned long long got = 0;
      std::memcpy(&got, out + static_cast<std::size_t>(r * ld + k) * size, size);
      const unsigned long long w = want[static_cast<std::size_t>(r * cols + k)] & (size == 8 ? ~0ull : ((1ull << (8 * size)) - 1));
      if (got != w) {
        ++bad;
        FAIL_CHECK(c.name << ": element (" << r << ", " << k << ") is " << hex(got, size) << ", the reference "
                          << hex(w, size));
      }
    }
  if (!c.alias) {  // nothing outside the window written
    const unsigned char* base = out - c.out_offset * size;
    for (std::size_t i = 0; i < before.size() && bad < 5; ++i) {
      const auto off = static_cast<Index>(i) - c.out_offset * static_cast<Index>(size);
      const Index e = off >= 0 ? off / static_cast<Index>(size) : -1;
      const bool inside = off >= 0 && e / ld < rows && e % ld < cols;
      if (!inside && base[i] != before[i]) {
        ++bad;
        FAIL_CHECK(c.name << ": byte " << off << " outside the output window was written");
      }
    }
  }
  for (std::size_t i = 0; i < c.expect.size() && bad < 5; ++i) {
    unsigned long long got = 0;
    const Index r = static_cast<Index>(i) / cols, k = static_cast<Index>(i) % cols;
    std::memcpy(&got, out + static_cast<std::size_t>(r * ld + k) * size, size);
    if (got != c.expect[i]) {
      ++bad;
      FAIL_CHECK(c.name << ": element " << i << " is " << hex(got, size) << ", expected " << hex(c.expect[i], size));
    }
  }
  CHECK(bad == 0);
}

template <class T>
T as(unsigned long long bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

void check_reduce(const Emulator& emu, Case& c, ReduceOp op) {
  const Program& p = c.program;
  const DType t = p.out_type;
  const std::size_t size = detail::dtype_size(t);
  const Index n = p.rows * p.cols;
  // Unfused: materialise into a dense aligned matrix, reduce it with the library's kernels.
  auto* dense = static_cast<unsigned char*>(g_arena.alloc(static_cast<std::size_t>(n) * size + 16));
  const std::vector<EmuNode> nodes = flatten(c.tree);
  for (Index r = 0; r < p.rows; ++r)
    for (Index k = 0; k < p.cols; ++k) {
      const unsigned long long v = emu.reference(nodes, r, k);
      std::memcpy(dense + static_cast<std::size_t>(r * p.cols + k) * size, &v, size);
    }
  const unsigned grid = c.plan.shape.gx;
  std::vector<unsigned char> plain_partials(grid * 8 + 64);
  auto* pp = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(plain_partials.data()) + 63) / 64 * 64);
  unsigned long long plain = 0, fused = 0;
  emu.plain_reduce(t, op, dense, n, grid, pp, &plain);
  std::vector<unsigned char> fused_partials;
  emu.run(c.kernel, p, c.plan, &fused, &fused_partials);
  INFO(c.name << ": grid " << grid << ", " << (c.plan.spec.flat ? "flat" : c.plan.spec.vec ? "2d vec" : "2d"));
  CHECK(hex(fused, 8) == hex(plain, 8));
  if (grid > 1) CHECK(std::memcmp(fused_partials.data(), pp, c.plan.partial_bytes) == 0);
}

void check_sums(const Emulator& emu, Case& c, bool rows) {
  const Program& p = c.program;
  const DType st = detail::sum_dtype(p.out_type);
  const Index len = rows ? p.rows : p.cols;
  std::vector<unsigned long long> got(static_cast<std::size_t>(std::max<Index>(len, 1)), 0xDEADBEEFull);
  emu.run(c.kernel, p, c.plan, got.data());
  const std::vector<EmuNode> nodes = flatten(c.tree);
  // got holds len values of st packed densely: read them by size.
  const std::size_t size = detail::dtype_size(st);
  const auto* bytes = reinterpret_cast<const unsigned char*>(got.data());
  int bad = 0;
  for (Index i = 0; i < len && bad < 5; ++i) {
    long double want = 0, magnitude = 0;
    const Index other = rows ? p.cols : p.rows;
    for (Index j = 0; j < other; ++j) {
      const unsigned long long v = rows ? emu.reference(nodes, i, j) : emu.reference(nodes, j, i);
      const long double x =
          detail::visit_dtype(p.out_type, [&](auto y) { return static_cast<long double>(as<decltype(y)>(v)); });
      want += x;
      magnitude += std::fabs(x);
    }
    unsigned long long raw = 0;
    std::memcpy(&raw, bytes + static_cast<std::size_t>(i) * size, size);
    const long double g =
        detail::visit_dtype(st, [&](auto x) { return static_cast<long double>(as<decltype(x)>(raw)); });
    // Floats: accumulated in double, rounded once; doubles: compensated within a thread, then
    // added pairwise (a few roundings of the partial magnitudes). Integers: exact.
    const long double tol = p.out_type == DType::f32   ? 6e-8L * std::fabs(want) + 1e-15L * magnitude
                            : p.out_type == DType::f64 ? 1e-15L * magnitude
                                                       : 0;
    if (!(std::fabs(g - want) <= tol)) {
      ++bad;
      FAIL_CHECK(c.name << ": sum " << i << " is " << static_cast<double>(g) << ", want " << static_cast<double>(want));
    }
  }
  CHECK(bad == 0);
}

void check_arg(const Emulator& emu, Case& c, bool max) {
  const Program& p = c.program;
  long long got = -7;
  emu.run(c.kernel, p, c.plan, &got);
  const std::vector<EmuNode> nodes = flatten(c.tree);
  long long want = -1;
  long double best = 0;
  bool best_nan = false;
  for (Index r = 0; r < p.rows; ++r)
    for (Index k = 0; k < p.cols; ++k) {
      const unsigned long long v = emu.reference(nodes, r, k);
      const long double x = detail::visit_dtype(p.out_type, [&](auto y) { return static_cast<long double>(as<decltype(y)>(v)); });
      const bool nan = x != x;
      if (best_nan) continue;
      if (want < 0 || nan || (max ? x > best : x < best)) {
        want = r * p.cols + k;
        best = x;
        best_nan = nan;
      }
    }
  INFO(c.name << ": grid " << c.plan.shape.gx);
  CHECK(got == want);
}

void check(const Emulator& emu, Case& c) {
  INFO(c.name);
  if (std::getenv("DEVMAT_EMU_LIST"))
    std::printf("%-48s %-14s flat %d vec %d grid %ux%u block %ux%u partials %zu\n", c.name.c_str(),
                spec_tag(c.plan.spec).c_str(), c.plan.spec.flat, c.plan.spec.vec, c.plan.shape.gx, c.plan.shape.gy,
                c.plan.shape.bx, c.plan.shape.by, c.plan.partial_bytes);
  switch (c.what) {
    case What::elementwise: return check_elementwise(emu, c);
    case What::sum: return check_reduce(emu, c, ReduceOp::sum);
    case What::mean: return check_reduce(emu, c, ReduceOp::mean);
    case What::min: return check_reduce(emu, c, ReduceOp::min);
    case What::max: return check_reduce(emu, c, ReduceOp::max);
    case What::row_sums: return check_sums(emu, c, true);
    case What::col_sums: return check_sums(emu, c, false);
    case What::arg_min: return check_arg(emu, c, false);
    case What::arg_max: return check_arg(emu, c, true);
  }
}

void check_all(std::initializer_list<What> whats) {
  Emulator& emu = emulator();
  for (Case& c : cases(emu))
    if (std::find(whats.begin(), whats.end(), c.what) != whats.end()) {
      const auto t0 = std::chrono::steady_clock::now();
      check(emu, c);
      if (std::getenv("DEVMAT_EMU_LIST"))
        std::printf("  %.0f ms\n", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
}

}  // namespace

TEST_CASE("emulated: element-wise kernels give the reference's bits, on every path") {
  check_all({What::elementwise});
}

TEST_CASE("emulated: fused sum, mean, min and max are bitwise the unfused reduction") {
  check_all({What::sum, What::mean, What::min, What::max});
}

TEST_CASE("emulated: row and column sums") { check_all({What::row_sums, What::col_sums}); }

TEST_CASE("emulated: arg min and arg max find the first extreme (NaN first)") { check_all({What::arg_min, What::arg_max}); }
