// An expression tree lowered to a straight-line program: its leaves (windows of device memory,
// each loaded once), its scalars, and its operations in evaluation order. The program's
// structure (not its pointers or scalar values) is its key: expressions with the same key run
// the same kernel. Plain C++.
#pragma once

#include "expr/node.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace devmat::detail {

/// How a leaf meets the result's rows x cols: all of it, one row stretched down (1 x cols),
/// one column stretched across (rows x 1), or one element everywhere (1 x 1).
enum class Broadcast : std::uint8_t { none, rows, cols, both };

struct ProgramLeaf {
  const void* data = nullptr;
  Index stride = 0;
  DType type = DType::f32;
  Broadcast bcast = Broadcast::none;
  const ExprNode* node = nullptr;  // for stream ordering and aliasing
};

/// One operation: value `id` (its index in Program::ops) = op(values a, b, c). A load reads
/// leaf `a`; a scalar reads scalar slot `a`.
struct ProgramOp {
  ExprOp op;
  DType type;     // the result's element type
  DType in_type;  // the operands' element type (casts and comparisons differ from `type`)
  int a = -1, b = -1, c = -1;
};

struct Program {
  Index rows = 0, cols = 0;
  DType out_type = DType::f32;
  std::vector<ProgramLeaf> leaves;
  std::vector<std::uint64_t> scalars;  // values' bytes
  std::vector<DType> scalar_types;
  std::vector<ProgramOp> ops;  // the last one is the result
  std::string key;             // the structure: ops, types, broadcasts
};

/// Lowers the tree: each distinct window is one leaf, identical subtrees are shared.
Program lower(const ExprNode& root);

}  // namespace devmat::detail
