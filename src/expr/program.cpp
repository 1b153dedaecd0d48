// Lowering an expression tree to a Program (expr/program.hpp).
#include "expr/program.hpp"

#include <map>
#include <tuple>

namespace devmat::detail {
namespace {

struct Lowering {
  Program& p;
  std::map<const ExprNode*, int> done;                              // node -> value id
  std::map<std::tuple<const void*, Index, Index, Index, DType>, int> windows;  // window -> leaf

  Broadcast bcast_of(const ExprNode& n) const {
    const bool r = n.rows == 1 && p.rows != 1, c = n.cols == 1 && p.cols != 1;
    return r && c ? Broadcast::both : r ? Broadcast::rows : c ? Broadcast::cols : Broadcast::none;
  }

  int emit(ProgramOp op) {
    p.ops.push_back(op);
    return static_cast<int>(p.ops.size()) - 1;
  }

  int visit(const ExprNode& n) {
    if (auto it = done.find(&n); it != done.end()) return it->second;
    int id = -1;
    switch (n.op) {
      case ExprOp::leaf: {
        const auto w = std::make_tuple(n.data, n.stride, n.rows, n.cols, n.type);
        auto it = windows.find(w);
        int leaf;
        if (it != windows.end()) {
          leaf = it->second;
        } else {
          leaf = static_cast<int>(p.leaves.size());
          p.leaves.push_back({n.data, n.stride, n.type, bcast_of(n), &n});
          windows.emplace(w, leaf);
        }
        // One load per leaf: a second node over the same window reuses the first load.
        for (std::size_t k = 0; k < p.ops.size(); ++k)
          if (p.ops[k].op == ExprOp::leaf && p.ops[k].a == leaf) return done[&n] = static_cast<int>(k);
        id = emit({ExprOp::leaf, n.type, n.type, leaf});
        break;
      }
      case ExprOp::scalar: {
        const int slot = static_cast<int>(p.scalars.size());
        p.scalars.push_back(n.bits);
        p.scalar_types.push_back(n.type);
        id = emit({ExprOp::scalar, n.type, n.type, slot});
        break;
      }
      default: {
        const int a = n.a ? visit(*n.a) : -1;
        const int b = n.b ? visit(*n.b) : -1;
        const int c = n.c ? visit(*n.c) : -1;
        // The operands' type: the mask's for select is not the values' type.
        const DType in = n.op == ExprOp::select ? n.b->type : n.a->type;
        id = emit({n.op, n.type, in, a, b, c});
      }
    }
    return done[&n] = id;
  }
};

char code(DType t) { return "fdiubU"[static_cast<int>(t)]; }

}  // namespace

Program lower(const ExprNode& root) {
  Program p;
  p.rows = root.rows;
  p.cols = root.cols;
  p.out_type = root.type;
  Lowering low{p, {}, {}};
  low.visit(root);
  // The key: every op with its types and operands, every leaf's type and broadcast.
  std::string& k = p.key;
  k.reserve(8 * p.ops.size() + 4 * p.leaves.size());
  for (const ProgramLeaf& l : p.leaves) {
    k += 'L';
    k += code(l.type);
    k += static_cast<char>('0' + static_cast<int>(l.bcast));
  }
  for (const ProgramOp& o : p.ops) {
    k += '|';
    k += std::to_string(static_cast<int>(o.op));
    k += code(o.type);
    k += code(o.in_type);
    for (int x : {o.a, o.b, o.c})
      if (x >= 0) {
        k += ',';
        k += std::to_string(x);
      }
  }
  return p;
}

}  // namespace devmat::detail
