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
  /// The structure (ops, types, broadcasts) in a few bytes a value: what the kernel cache is
  /// keyed on, with its hash. Two programs have the same code exactly when they have the same key.
  std::string code;
  std::uint64_t hash = 0;
  /// The structure, readable ("Lf0|0ff,0|..."): for generated source, messages and tests. Set by
  /// lower(), empty after lower_into() (program_key() makes it).
  std::string key;

  /// Empties the program, keeping the vectors' memory for the next lowering.
  void clear() noexcept;
};

/// Lowers the tree: each distinct window is one leaf, identical subtrees are shared.
Program lower(const ExprNode& root);
/// As lower(), into `p` (cleared first, its memory reused: lowering a tree no larger than the
/// last one allocates nothing), without the readable key.
void lower_into(const ExprNode& root, Program& p);
/// The readable key of a program (Program::key).
std::string program_key(const Program& p);

}  // namespace devmat::detail
