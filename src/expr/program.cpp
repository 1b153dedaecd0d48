// Lowering an expression tree to a Program (expr/program.hpp). Trees are small: the bookkeeping
// is a few flat vectors searched linearly (hash maps only for trees that outgrow them), kept per
// thread and reused, so that lowering an expression like the last one allocates nothing.
#include "expr/program.hpp"

#include "detail/thread_cache.hpp"

#include <cstring>
#include <unordered_map>
#include <utility>

namespace devmat::detail {
namespace {

constexpr std::size_t kLinear = 32;  // entries searched linearly before a hash map takes over

/// A window of memory as a leaf sees it: two leaf nodes over the same window are one leaf.
struct WindowKey {
  const void* data;
  Index stride, rows, cols;
  DType type;
  bool operator==(const WindowKey& o) const noexcept {
    return data == o.data && stride == o.stride && rows == o.rows && cols == o.cols && type == o.type;
  }
};
struct WindowHash {
  std::size_t operator()(const WindowKey& w) const noexcept {
    std::size_t h = std::hash<const void*>()(w.data);
    for (Index v : {w.stride, w.rows, w.cols, static_cast<Index>(w.type)}) h = h * 1000003u ^ std::hash<Index>()(v);
    return h;
  }
};

WindowKey window_key(const ExprNode& n) { return {n.data, n.stride, n.rows, n.cols, n.type}; }

/// The lowering's bookkeeping, one per thread, emptied (not freed) before each lowering.
struct Scratch {
  std::vector<std::pair<const ExprNode*, int>> seen;  // shared node -> its value id
  std::unordered_map<const ExprNode*, int> seen_map;  // the same, once `seen` outgrows kLinear
  std::vector<int> leaf_load;                         // leaf -> the op that loads it
  std::unordered_map<WindowKey, int, WindowHash> window_map;  // window -> leaf, past kLinear leaves

  void clear() {
    seen.clear();
    leaf_load.clear();
    if (!seen_map.empty()) seen_map.clear();
    if (!window_map.empty()) window_map.clear();
  }
};

struct Lowering {
  Program& p;
  Scratch& s;

  Broadcast bcast_of(const ExprNode& n) const {
    const bool r = n.rows == 1 && p.rows != 1, c = n.cols == 1 && p.cols != 1;
    return r && c ? Broadcast::both : r ? Broadcast::rows : c ? Broadcast::cols : Broadcast::none;
  }

  // Field by field into the vector: a ProgramOp assembled on the stack from byte and int
  // stores, then copied as one 16-byte load, stalls on store forwarding.
  int emit(ExprOp op, DType type, DType in_type, int a, int b = -1, int c = -1) {
    ProgramOp& o = p.ops.emplace_back();
    o.op = op;
    o.type = type;
    o.in_type = in_type;
    o.a = a;
    o.b = b;
    o.c = c;
    return static_cast<int>(p.ops.size()) - 1;
  }

  int find_seen(const ExprNode* n) const {
    if (!s.seen_map.empty()) {
      const auto it = s.seen_map.find(n);
      return it == s.seen_map.end() ? -1 : it->second;
    }
    for (const auto& [node, id] : s.seen)
      if (node == n) return id;
    return -1;
  }

  void add_seen(const ExprNode* n, int id) {
    if (s.seen_map.empty() && s.seen.size() < kLinear) {
      s.seen.emplace_back(n, id);
      return;
    }
    if (s.seen_map.empty()) s.seen_map.insert(s.seen.begin(), s.seen.end());
    s.seen_map.emplace(n, id);
  }

  /// The value id of an operand. A node whose only owner is its parent is reached once (the
  /// parent is lowered once), so only nodes with other owners are looked up and remembered:
  /// identical subtrees are shared, and a tree of distinct nodes does no lookups. Inlined into
  /// lower_node: the call between the two cost a quarter of lowering chain10 (190 -> 145 ns).
  [[gnu::always_inline]] int operand(const ExprPtr& k) {
    if (!k) return -1;
    if (k.use_count() == 1) return lower_node(*k);
    if (const int id = find_seen(k.get()); id >= 0) return id;
    const int id = lower_node(*k);
    add_seen(k.get(), id);
    return id;
  }

  /// The load of a leaf's window: one per distinct window.
  int load(const ExprNode& n) {
    const WindowKey w = window_key(n);
    if (s.window_map.empty()) {
      for (std::size_t k = 0; k < p.leaves.size(); ++k)
        if (window_key(*p.leaves[k].node) == w) return s.leaf_load[k];
    } else if (const auto it = s.window_map.find(w); it != s.window_map.end()) {
      return s.leaf_load[static_cast<std::size_t>(it->second)];
    }
    const int leaf = static_cast<int>(p.leaves.size());
    ProgramLeaf& l = p.leaves.emplace_back();
    l.data = n.data;
    l.stride = n.stride;
    l.type = n.type;
    l.bcast = bcast_of(n);
    l.node = &n;
    const int id = emit(ExprOp::leaf, n.type, n.type, leaf);
    s.leaf_load.push_back(id);
    if (p.leaves.size() > kLinear) {
      if (s.window_map.empty())
        for (std::size_t k = 0; k < p.leaves.size(); ++k)
          s.window_map.emplace(window_key(*p.leaves[k].node), static_cast<int>(k));
      else
        s.window_map.emplace(w, leaf);
    }
    return id;
  }

  int lower_node(const ExprNode& n) {
    switch (n.op) {
      case ExprOp::leaf:
        return load(n);
      case ExprOp::scalar: {
        const int slot = static_cast<int>(p.scalars.size());
        p.scalars.push_back(n.bits);
        p.scalar_types.push_back(n.type);
        return emit(ExprOp::scalar, n.type, n.type, slot);
      }
      default: {
        const int a = operand(n.a);
        const int b = operand(n.b);
        const int c = operand(n.c);
        // The operands' type: the mask's for select is not the values' type.
        const DType in = n.op == ExprOp::select ? n.b->type : n.a->type;
        return emit(n.op, n.type, in, a, b, c);
      }
    }
  }
};

static_assert(static_cast<int>(ExprOp::select) < 64, "Program::code packs an op and its operand count in a byte");

char* put_varint(char* out, std::size_t v) {
  for (; v >= 0x80; v >>= 7) *out++ = static_cast<char>(v | 0x80);
  *out++ = static_cast<char>(v);
  return out;
}

/// The code (Program::code): the leaf count, a byte a leaf (type, broadcast), and per op a
/// byte (op, operand count), a byte (types) and its operands (varints): what the readable key
/// says, in bytes.
void encode(Program& p) {
  std::string& c = p.code;
  c.resize(10 + p.leaves.size() + 17 * p.ops.size());  // the most it can take (varints of 5 bytes)
  char* out = put_varint(c.data(), p.leaves.size());
  for (const ProgramLeaf& l : p.leaves)
    *out++ = static_cast<char>(static_cast<int>(l.type) | static_cast<int>(l.bcast) << 3);
  for (const ProgramOp& o : p.ops) {
    const int n = (o.a >= 0) + (o.b >= 0) + (o.c >= 0);
    *out++ = static_cast<char>(static_cast<int>(o.op) | n << 6);
    *out++ = static_cast<char>(static_cast<int>(o.type) | static_cast<int>(o.in_type) << 3);
    if (o.a >= 0) out = put_varint(out, static_cast<std::size_t>(o.a));
    if (o.b >= 0) out = put_varint(out, static_cast<std::size_t>(o.b));
    if (o.c >= 0) out = put_varint(out, static_cast<std::size_t>(o.c));
  }
  c.resize(static_cast<std::size_t>(out - c.data()));
}

/// A 64-bit hash of bytes, eight at a time (it picks buckets; equality is decided on the bytes).
std::uint64_t hash_bytes(const char* s, std::size_t n) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  const auto mix = [&h](std::uint64_t w) {
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 32;
  };
  for (; n >= 8; s += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, s, 8);
    mix(w);
  }
  std::uint64_t w = 0;
  std::memcpy(&w, s, n);
  mix(w ^ 0xC4CEB9FE1A85EC53ull);
  return h;
}

char code(DType t) { return "fdiubU"[static_cast<int>(t)]; }

void lower_with(const ExprNode& root, Program& p, Scratch& scratch) {
  scratch.clear();
  p.clear();
  p.rows = root.rows;
  p.cols = root.cols;
  p.out_type = root.type;
  Lowering{p, scratch}.lower_node(root);
  encode(p);
  p.hash = hash_bytes(p.code.data(), p.code.size());
}

}  // namespace

void Program::clear() noexcept {
  rows = cols = 0;
  out_type = DType::f32;
  leaves.clear();
  scalars.clear();
  scalar_types.clear();
  ops.clear();
  code.clear();
  hash = 0;
  key.clear();
}

void lower_into(const ExprNode& root, Program& p) {
  if (Scratch* cached = ThreadCache<Scratch>::get()) {  // lowering never re-enters itself
    lower_with(root, p, *cached);
    return;
  }
  Scratch own;  // at thread exit
  lower_with(root, p, own);
}

Program lower(const ExprNode& root) {
  Program p;
  lower_into(root, p);
  p.key = program_key(p);
  return p;
}

std::string program_key(const Program& p) {
  // Every op with its types and operands, every leaf's type and broadcast.
  std::string k;
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
  return k;
}

}  // namespace devmat::detail
