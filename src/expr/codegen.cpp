// Generating the kernel source of a lowered expression (expr/codegen.hpp).
#include "expr/codegen.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace devmat::detail {

const char* dtype_cxx(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "std::int32_t";
    case DType::u8: return "std::uint8_t";
    case DType::i64: return "std::int64_t";
    default: return "std::uint64_t";
  }
}

namespace {

/// sum_t of the type: what sum(), row_sums() and col_sums() return.
DType sum_dtype(DType t) {
  switch (t) {
    case DType::i32: return DType::i64;
    case DType::u8: return DType::u64;
    default: return t;
  }
}

bool is_transcendental(ExprOp op) {
  switch (op) {
    case ExprOp::exp: case ExprOp::log: case ExprOp::log1p: case ExprOp::expm1: case ExprOp::sin:
    case ExprOp::cos: case ExprOp::tanh: case ExprOp::pow:
      return true;
    default:
      return false;
  }
}

/// The operation function of kernels/expr_ops.cuh, and how many operands it takes.
struct OpInfo {
  const char* fn;
  int arity;
  enum Typing { same, float_only, compare, logic, to_mask, cast, select } typing;
};

OpInfo op_info(ExprOp op) {
  switch (op) {
    case ExprOp::neg: return {"op_neg", 1, OpInfo::same};
    case ExprOp::abs: return {"op_abs", 1, OpInfo::same};
    case ExprOp::square: return {"op_square", 1, OpInfo::same};
    case ExprOp::sqrt: return {"op_sqrt", 1, OpInfo::float_only};
    case ExprOp::rsqrt: return {"op_rsqrt", 1, OpInfo::float_only};
    case ExprOp::exp: return {"op_exp", 1, OpInfo::float_only};
    case ExprOp::log: return {"op_log", 1, OpInfo::float_only};
    case ExprOp::log1p: return {"op_log1p", 1, OpInfo::float_only};
    case ExprOp::expm1: return {"op_expm1", 1, OpInfo::float_only};
    case ExprOp::sin: return {"op_sin", 1, OpInfo::float_only};
    case ExprOp::cos: return {"op_cos", 1, OpInfo::float_only};
    case ExprOp::tanh: return {"op_tanh", 1, OpInfo::float_only};
    case ExprOp::floor: return {"op_floor", 1, OpInfo::float_only};
    case ExprOp::ceil: return {"op_ceil", 1, OpInfo::float_only};
    case ExprOp::round: return {"op_round", 1, OpInfo::float_only};
    case ExprOp::logical_not: return {"op_logical_not", 1, OpInfo::to_mask};
    case ExprOp::cast: return {"op_cast", 1, OpInfo::cast};
    case ExprOp::add: return {"op_add", 2, OpInfo::same};
    case ExprOp::sub: return {"op_sub", 2, OpInfo::same};
    case ExprOp::mul: return {"op_mul", 2, OpInfo::same};
    case ExprOp::div: return {"op_div", 2, OpInfo::same};
    case ExprOp::min: return {"op_min", 2, OpInfo::same};
    case ExprOp::max: return {"op_max", 2, OpInfo::same};
    case ExprOp::pow: return {"op_pow", 2, OpInfo::float_only};
    case ExprOp::eq: return {"op_eq", 2, OpInfo::compare};
    case ExprOp::ne: return {"op_ne", 2, OpInfo::compare};
    case ExprOp::lt: return {"op_lt", 2, OpInfo::compare};
    case ExprOp::le: return {"op_le", 2, OpInfo::compare};
    case ExprOp::gt: return {"op_gt", 2, OpInfo::compare};
    case ExprOp::ge: return {"op_ge", 2, OpInfo::compare};
    case ExprOp::logical_and: return {"op_logical_and", 2, OpInfo::logic};
    case ExprOp::logical_or: return {"op_logical_or", 2, OpInfo::logic};
    case ExprOp::select: return {"op_select", 3, OpInfo::select};
    default: throw std::logic_error("devmat: expression engine: no operation function for op " +
                                    std::to_string(static_cast<int>(op)));
  }
}

[[noreturn]] void malformed(const Program& p, std::size_t id, const char* why) {
  throw std::logic_error("devmat: expression engine: malformed program (op " + std::to_string(id) + ": " + why +
                         "; key " + p.key + ")");
}

/// Checks that every operation's operands exist, come earlier and have the types it takes.
void check(const Program& p) {
  if (p.ops.empty()) throw std::logic_error("devmat: expression engine: empty program");
  if (p.ops.back().type != p.out_type) malformed(p, p.ops.size() - 1, "the result type is not out_type");
  for (std::size_t id = 0; id < p.ops.size(); ++id) {
    const ProgramOp& o = p.ops[id];
    const auto operand = [&](int x) -> const ProgramOp& {
      if (x < 0 || static_cast<std::size_t>(x) >= id) malformed(p, id, "an operand is missing or comes later");
      return p.ops[static_cast<std::size_t>(x)];
    };
    if (o.op == ExprOp::leaf) {
      if (o.a < 0 || static_cast<std::size_t>(o.a) >= p.leaves.size()) malformed(p, id, "no such leaf");
      if (p.leaves[static_cast<std::size_t>(o.a)].type != o.type) malformed(p, id, "the leaf's type differs");
      continue;
    }
    if (o.op == ExprOp::scalar) {
      if (o.a < 0 || static_cast<std::size_t>(o.a) >= p.scalars.size() || p.scalar_types.size() != p.scalars.size())
        malformed(p, id, "no such scalar");
      if (p.scalar_types[static_cast<std::size_t>(o.a)] != o.type) malformed(p, id, "the scalar's type differs");
      continue;
    }
    const OpInfo info = op_info(o.op);
    const ProgramOp& a = operand(o.a);
    const ProgramOp* b = info.arity >= 2 ? &operand(o.b) : nullptr;
    const ProgramOp* c = info.arity >= 3 ? &operand(o.c) : nullptr;
    switch (info.typing) {
      case OpInfo::float_only:
        if (!dtype_is_float(o.type)) malformed(p, id, "a float function of an integer type");
        [[fallthrough]];
      case OpInfo::same:
        if (a.type != o.type || (b && b->type != o.type)) malformed(p, id, "operand types differ from the result's");
        break;
      case OpInfo::compare:
        if (o.type != DType::u8 || a.type != b->type) malformed(p, id, "a comparison of different types");
        break;
      case OpInfo::logic:
      case OpInfo::to_mask:
        if (o.type != DType::u8) malformed(p, id, "a logical operation that is not uint8_t");
        break;
      case OpInfo::cast:
        break;
      case OpInfo::select:
        if (b->type != o.type || c->type != o.type) malformed(p, id, "select's values differ from the result's type");
        break;
    }
  }
}

const char* bool_str(bool b) { return b ? "true" : "false"; }

}  // namespace

int elementwise_vector(const Program& p) {
  std::size_t widest = dtype_size(p.out_type);
  for (const ProgramLeaf& l : p.leaves) widest = std::max(widest, dtype_size(l.type));
  return static_cast<int>(16 / widest);
}

bool has_transcendental(const Program& p) {
  return std::any_of(p.ops.begin(), p.ops.end(), [](const ProgramOp& o) { return is_transcendental(o.op); });
}

int elementwise_unroll(const Program& p) {
  if (has_transcendental(p)) return 1;
  // Bytes (16-element vectors) one unit a thread: u8 add of 2^28 ran 1.057 of thrust with one,
  // 0.76 with two, 0.50 with four or eight (H200, bench_elementwise ours-u<N>); 4-byte and
  // 8-byte types the same within 1% at 1 to 8 units (0.98 of thrust), 4 kept.
  return elementwise_vector(p) <= 4 ? 4 : 1;
}

std::string generate_source(const Program& p, const KernelSpec& spec) {
  check(p);
  const std::string out_t = dtype_cxx(p.out_type);
  const std::size_t nl = p.leaves.size(), ns = p.scalars.size();
  const auto leaf_t = [&](std::size_t k) { return std::string(dtype_cxx(p.leaves[k].type)); };
  const auto leaf_ptr = [&](std::size_t k) {
    return "static_cast<const " + leaf_t(k) + "*>(p.leaf[" + std::to_string(k) + "].data)";
  };
  const auto row_of = [&](std::size_t k) {  // "+ r * rs" of leaf k, or nothing (one row)
    const Broadcast b = p.leaves[k].bcast;
    return b == Broadcast::rows || b == Broadcast::both ? std::string()
                                                         : " + r * p.leaf[" + std::to_string(k) + "].rs";
  };
  const auto col_of = [&](std::size_t k) {
    const Broadcast b = p.leaves[k].bcast;
    return b == Broadcast::cols || b == Broadcast::both ? std::string() : std::string(" + c");
  };

  std::string s;
  s.reserve(4096);
  s += "// devmat fused expression, generated (src/expr/codegen.cpp). Program: ";
  s += p.key;
  s += "\n#include \"expr.cuh\"\n"
       "#ifndef DEVMAT_EXPR_NS\n#define DEVMAT_EXPR_NS expr_gen\n#endif\n"
       "namespace devmat::detail { namespace DEVMAT_EXPR_NS {\n";

  // The expression: leaves' values and scalars in, the result out, one SSA value per op.
  s += spec.outline ? "__device__ __noinline__ " : "__device__ __forceinline__ ";
  s += out_t + " expr_eval(";
  std::string params;
  for (std::size_t k = 0; k < nl; ++k) params += (k ? ", " : "") + leaf_t(k) + " x" + std::to_string(k);
  for (std::size_t j = 0; j < ns; ++j)
    params += (nl + j ? ", " : "") + std::string(dtype_cxx(p.scalar_types[j])) + " s" + std::to_string(j);
  s += params + ") {\n";
  for (std::size_t id = 0; id < p.ops.size(); ++id) {
    const ProgramOp& o = p.ops[id];
    const auto t = [](int x) { return "t" + std::to_string(x); };
    s += "  const ";
    s += dtype_cxx(o.type);
    s += " t" + std::to_string(id) + " = ";
    if (o.op == ExprOp::leaf) {
      s += "x" + std::to_string(o.a);
    } else if (o.op == ExprOp::scalar) {
      s += "s" + std::to_string(o.a);
    } else {
      const OpInfo info = op_info(o.op);
      s += info.fn;
      const DType ta = p.ops[static_cast<std::size_t>(o.a)].type;
      switch (info.typing) {
        case OpInfo::same:
        case OpInfo::float_only: s += "<" + std::string(dtype_cxx(o.type)) + ">"; break;
        case OpInfo::compare:
        case OpInfo::to_mask: s += "<" + std::string(dtype_cxx(ta)) + ">"; break;
        case OpInfo::cast: s += "<" + std::string(dtype_cxx(o.type)) + ", " + dtype_cxx(ta) + ">"; break;
        case OpInfo::logic:
          s += "<" + std::string(dtype_cxx(ta)) + ", " + dtype_cxx(p.ops[static_cast<std::size_t>(o.b)].type) + ">";
          break;
        case OpInfo::select: s += "<" + std::string(dtype_cxx(ta)) + ", " + dtype_cxx(o.type) + ">"; break;
      }
      s += "(" + t(o.a);
      if (info.arity >= 2) s += ", " + t(o.b);
      if (info.arity >= 3) s += ", " + t(o.c);
      s += ")";
    }
    s += ";\n";
  }
  s += "  return t" + std::to_string(p.ops.size() - 1) + ";\n}\n";

  // G: the parameter block and the loads (kernels/expr.cuh says what each member does).
  s += "struct Gen {\n  using Out = " + out_t + ";\n";
  s += "  struct Params {\n    ExprHead h;\n    ExprLeaf leaf[" + std::to_string(nl ? nl : 1) +
       "];\n    unsigned long long scalar[" + std::to_string(ns ? ns : 1) + "];\n  };\n";
  s += "  struct Fixed {\n";
  for (std::size_t k = 0; k < nl; ++k)
    if (p.leaves[k].bcast == Broadcast::both) s += "    " + leaf_t(k) + " x" + std::to_string(k) + ";\n";
  s += "  };\n  template <int N> struct Regs {\n";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    if (b == Broadcast::none || b == Broadcast::rows)
      s += "    Pack<" + leaf_t(k) + ", N> x" + std::to_string(k) + ";\n";
    else if (b == Broadcast::cols)
      s += "    " + leaf_t(k) + " x" + std::to_string(k) + ";\n";
  }
  s += "  };\n";
  s += "  template <bool kNC>\n  static __device__ __forceinline__ void load_fixed(const Params& p, Fixed& f) {\n";
  for (std::size_t k = 0; k < nl; ++k)
    if (p.leaves[k].bcast == Broadcast::both)
      s += "    f.x" + std::to_string(k) + " = expr_load_one<" + leaf_t(k) + ", kNC>(" + leaf_ptr(k) + ");\n";
  s += "    (void)p;\n    (void)f;\n  }\n";
  s += "  template <int N, bool kVec, bool kNC>\n"
       "  static __device__ __forceinline__ void load_row(const Params& p, Index r, Index c, Regs<N>& g) {\n";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    const std::string x = "    g.x" + std::to_string(k) + " = ";
    if (b == Broadcast::none || b == Broadcast::rows)
      s += x + "expr_load_span<" + leaf_t(k) + ", N, kVec, kNC>(" + leaf_ptr(k) + row_of(k) + col_of(k) + ");\n";
    else if (b == Broadcast::cols)
      s += x + "expr_load_one<" + leaf_t(k) + ", kNC>(" + leaf_ptr(k) + row_of(k) + ");\n";
  }
  s += "    (void)p;\n    (void)r;\n    (void)c;\n    (void)g;\n  }\n";
  std::string scalar_args;
  for (std::size_t j = 0; j < ns; ++j)
    scalar_args += (nl + j ? ", " : "") + std::string("op_bits<") + dtype_cxx(p.scalar_types[j]) + ">(p.scalar[" +
                   std::to_string(j) + "])";
  s += "  template <int N>\n  static __device__ __forceinline__ Out value(const Params& p, const Fixed& f, "
       "const Regs<N>& g, int k) {\n    (void)p;\n    (void)f;\n    (void)g;\n    (void)k;\n    return expr_eval(";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    s += k ? ", " : "";
    s += b == Broadcast::both ? "f.x" + std::to_string(k)
         : b == Broadcast::cols ? "g.x" + std::to_string(k)
                                : "g.x" + std::to_string(k) + ".v[k]";
  }
  s += scalar_args + ");\n  }\n";
  // The slot path: chunks of the leaves read along a row, the value of a leaf with one per row.
  s += "  template <int N> struct Slot {\n";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    if (b == Broadcast::none || b == Broadcast::rows)
      s += "    ExprSlotLeaf<" + leaf_t(k) + ", N> x" + std::to_string(k) + ";\n";
    else if (b == Broadcast::cols)
      s += "    " + leaf_t(k) + " x" + std::to_string(k) + "{};\n";
  }
  s += "  };\n";
  s += "  template <int N>\n"
       "  static __device__ __forceinline__ bool slot_load(const Params& p, Index r, Index c0, int before, int left, "
       "bool valid, bool want, Slot<N>& s) {\n    bool vec = want;\n";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    if (b == Broadcast::none || b == Broadcast::rows)
      s += "    vec = s.x" + std::to_string(k) + ".locate(" + leaf_ptr(k) + row_of(k) + ", c0, before, left) & vec;\n";
  }
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    if (b == Broadcast::none || b == Broadcast::rows)
      s += "    s.x" + std::to_string(k) + ".load(valid, vec);\n";
    else if (b == Broadcast::cols)
      s += "    if (vec) s.x" + std::to_string(k) + " = expr_load_one<" + leaf_t(k) + ", false>(" + leaf_ptr(k) +
           row_of(k) + ");\n";
  }
  s += "    (void)p;\n    (void)r;\n    (void)c0;\n    (void)before;\n    (void)left;\n    (void)valid;\n    (void)s;\n"
       "    return vec;\n  }\n";
  s += "  template <int N>\n  static __device__ __forceinline__ void slot_regs(const Slot<N>& s, Regs<N>& g) {\n";
  for (std::size_t k = 0; k < nl; ++k) {
    const Broadcast b = p.leaves[k].bcast;
    if (b == Broadcast::none || b == Broadcast::rows)
      s += "    g.x" + std::to_string(k) + " = s.x" + std::to_string(k) + ".vector();\n";
    else if (b == Broadcast::cols)
      s += "    g.x" + std::to_string(k) + " = s.x" + std::to_string(k) + ";\n";
  }
  s += "    (void)s;\n    (void)g;\n  }\n";
  s += "  template <bool kNC>\n  static __device__ __forceinline__ Out at(const Params& p, const Fixed& f, Index r, "
       "Index c) {\n    (void)p;\n    (void)f;\n    (void)r;\n    (void)c;\n    return expr_eval(";
  for (std::size_t k = 0; k < nl; ++k) {
    s += k ? ", " : "";
    if (p.leaves[k].bcast == Broadcast::both) s += "f.x" + std::to_string(k);
    else s += "expr_load_one<" + leaf_t(k) + ", kNC>(" + leaf_ptr(k) + row_of(k) + col_of(k) + ")";
  }
  s += scalar_args + ");\n  }\n};\n}}  // namespace devmat::detail::DEVMAT_EXPR_NS\n";

  // The kernel.
  const std::string gen = "devmat::detail::DEVMAT_EXPR_NS::Gen";
  const std::string sum_t = dtype_cxx(sum_dtype(p.out_type));
  std::string bounds = "__launch_bounds__(devmat::detail::kExprThreads)";
  std::string body;
  switch (spec.kind) {
    case KernelKind::elementwise_flat:
      body = "devmat::detail::expr_flat_body<" + gen + ", " +
             (spec.vector ? std::to_string(spec.vector) + ", 1" :
                            std::to_string(elementwise_vector(p)) + ", " +
                                std::to_string(spec.units ? spec.units : elementwise_unroll(p))) +
             ", " + bool_str(spec.tail) + ">(p);";
      break;
    case KernelKind::elementwise_2d:
      body = std::string("devmat::detail::") + (spec.vec ? "expr_2d_body<" : "expr_slots_body<") + gen + ", " +
             std::to_string(elementwise_vector(p)) + ", " + std::to_string(kExpr2dUnroll) + ">(p);";
      break;
    case KernelKind::reduce_sum:
    case KernelKind::reduce_min:
    case KernelKind::reduce_max: {
      const std::string r = spec.kind == KernelKind::reduce_sum ? "devmat::detail::SumReducer<" + out_t + ">"
                            : "devmat::detail::MinMaxReducer<" + out_t + ", " +
                                  bool_str(spec.kind == KernelKind::reduce_max) + ">";
      if (spec.min_blocks)
        bounds = "__launch_bounds__(devmat::detail::kExprThreads, " + std::to_string(spec.min_blocks) + ")";
      body = "devmat::detail::expr_reduce_body<" + gen + ", " + r + ", " +
             (spec.kind == KernelKind::reduce_sum ? sum_t : out_t) + ", " + bool_str(spec.flat) + ", " +
             bool_str(spec.vec) + ">(p);";
      break;
    }
    case KernelKind::row_sums:
      body = "devmat::detail::expr_row_sums_body<" + gen + ", " + sum_t + ">(p);";
      break;
    case KernelKind::col_sums:
      body = "devmat::detail::expr_col_sums_body<" + gen + ", " + sum_t + ">(p);";
      break;
    case KernelKind::arg_min:
    case KernelKind::arg_max:
      body = "devmat::detail::expr_arg_body<" + gen + ", " + bool_str(spec.kind == KernelKind::arg_max) + ", " +
             bool_str(spec.flat) + ", " + bool_str(spec.vec) + ">(p);";
      break;
  }
  s += "#ifndef DEVMAT_EXPR_KERNEL\n#define DEVMAT_EXPR_KERNEL " + std::string(kExprKernelName) +
       "\n#define DEVMAT_EXPR_FINAL " + kExprFinalKernelName + "\n#endif\n";
  s += "extern \"C\" __global__ void " + bounds + "\nDEVMAT_EXPR_KERNEL(const __grid_constant__ " + gen +
       "::Params p) {\n  " + body + "\n}\n";
  if (spec.kind == KernelKind::arg_min || spec.kind == KernelKind::arg_max)
    s += "extern \"C\" __global__ void __launch_bounds__(devmat::detail::kExprThreads)\nDEVMAT_EXPR_FINAL(const " +
         out_t + "* values, const devmat::Index* indices, devmat::Index count, long long* out) {\n  "
         "devmat::detail::expr_arg_final_body<" + out_t + ", " + bool_str(spec.kind == KernelKind::arg_max) +
         ">(values, indices, count, out);\n}\n";
  return s;
}

}  // namespace devmat::detail
