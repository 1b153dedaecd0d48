// Launch plans of the expression kernels (expr/plan.hpp).
#include "expr/plan.hpp"

#include "dispatch/common.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace devmat::detail {
namespace {

constexpr int kReduceUnroll = 4;          // kExprReduceUnroll = DefaultReduceConfig::kUnroll
constexpr Index kRowBlockMinCols = 8192;  // rows at least this long get a block (or more) each
constexpr Index kMinRowChunk = 8192;      // columns: a block's share of a split row
constexpr int kBlocksPerSm = 2048 / kExprBlock;  // resident blocks of 256 threads per SM, at most

unsigned grid_1d(Index blocks) {
  return static_cast<unsigned>(std::clamp<Index>(blocks, 1, std::numeric_limits<int>::max()));
}

/// Whether every leaf allows the flat path (contiguous with the result's shape, or 1 x 1, and
/// 16-byte aligned), and whether the 2D path may move V-element vectors: every row start that
/// is read along a row aligned to its vector (up to 16 bytes; 16-byte pieces beyond).
struct Paths {
  bool flat = true;
  bool vec = true;
};

Paths paths_of(const Program& p, int V) {
  Paths r;
  const auto fits = [&](const void* data, Index stride, std::size_t size) {
    const std::size_t a = std::min<std::size_t>(static_cast<std::size_t>(V) * size, 16);
    return is_aligned(data, a) && (p.rows == 1 || (static_cast<std::size_t>(stride) * size) % a == 0);
  };
  for (const ProgramLeaf& l : p.leaves) {
    const std::size_t size = dtype_size(l.type);
    switch (l.bcast) {
      case Broadcast::none:
        r.flat = r.flat && (p.rows == 1 || l.stride == p.cols) && is_aligned(l.data, 16);
        r.vec = r.vec && fits(l.data, l.stride, size);
        break;
      case Broadcast::rows:  // one row, read along
        r.flat = false;
        r.vec = r.vec && fits(l.data, 0, size);
        break;
      case Broadcast::cols:  // one element per row
        r.flat = false;
        break;
      case Broadcast::both:
        break;
    }
  }
  r.vec = r.vec && V > 1;
  return r;
}

/// The reductions' paths: V = kVec16 of the result type (the unfused reduction's vectors); 2D
/// vectors also need units that never straddle a row.
Paths reduce_paths(const Program& p, int V) {
  Paths r = paths_of(p, V);
  r.vec = !r.flat && r.vec && (p.rows == 1 || p.cols % V == 0);
  return r;
}

int reduce_vector(const Program& p) { return static_cast<int>(16 / dtype_size(p.out_type)); }

}  // namespace

Plan plan_elementwise(const Program& p, const void* out, Index ld_out, int sms, int small_vector, int flat_units) {
  Plan plan;
  if (p.rows <= 0 || p.cols <= 0) {
    plan.empty = true;
    return plan;
  }
  const int V = elementwise_vector(p);
  const std::size_t out_size = dtype_size(p.out_type);
  Paths paths = paths_of(p, V);
  paths.flat = paths.flat && (p.rows == 1 || ld_out == p.cols) && is_aligned(out, 16);
  paths.vec = paths.vec && is_aligned(out, static_cast<std::size_t>(V) * out_size) &&
              (p.rows == 1 || (static_cast<std::size_t>(ld_out) * out_size) % (V * out_size) == 0);
  plan.spec.kind = paths.flat ? KernelKind::elementwise_flat : KernelKind::elementwise_2d;
  plan.spec.vec = !paths.flat && paths.vec;
  ExprHead& h = plan.head;
  h.ld_out = ld_out;
  h.rows = p.rows;
  h.cols = p.cols;
  h.n = p.rows * p.cols;
  if (paths.flat) {
    // An exact grid: U units of V elements per thread, or one where U would leave SMs idle: a
    // small matrix then runs as U times the blocks (256 x 256 floats on the H200: 16 blocks of
    // four units took 4.1 us, 64 blocks of one 3.2 us).
    const Index n_vec = h.n / V;
    const bool forced = flat_units >= 1 && flat_units <= 8;
    const int unroll = forced ? flat_units : elementwise_unroll(p);
    const bool small = ceil_div(n_vec, Index(kExprBlock) * unroll) < 2 * Index(sms);
    const int units = small ? 1 : unroll;
    h.units = units;
    if (forced && !small) plan.spec.units = static_cast<std::uint8_t>(unroll);
    plan.shape.gx = grid_1d(ceil_div(n_vec, Index(kExprBlock) * units));
    if (small && small_vector > 0 && small_vector <= V && (small_vector & (small_vector - 1)) == 0) {
      // Narrower units, as many more threads (every vector stays aligned: all is 16-byte
      // aligned), in a kernel with only the one-unit loop (V itself: the same grid, less code).
      plan.spec.vector = static_cast<std::uint8_t>(small_vector);
      plan.shape.gx = grid_1d(ceil_div(h.n / small_vector, Index(kExprBlock)));
    } else if (small && unroll > 1) {
      // The one-unit kernel on V-element units (the same grid): a kernel holds one loop, U units
      // a thread or one, so a small matrix's first evaluation compiles V copies of the
      // expression, not U * V (with unroll 1 the default kernel is that kernel already).
      plan.spec.vector = static_cast<std::uint8_t>(V);
    }
    // The tail's code (a copy of the expression) only in the kernels of counts that have one.
    plan.spec.tail = h.n % (plan.spec.vector ? plan.spec.vector : V) != 0;
    return plan;
  }
  constexpr int J = kExpr2dUnroll;
  if (!paths.vec) {
    // The slot path: rows cut into slots at the output's V-element vectors (a row whose start
    // is not at one spans one slot more), kExprSlotLanes slots a warp run, J runs a warp.
    const std::size_t out_vec = static_cast<std::size_t>(V) * out_size;
    const bool rows_aligned =
        is_aligned(out, out_vec) && (p.rows == 1 || (static_cast<std::size_t>(ld_out) * out_size) % out_vec == 0);
    const Index slots = rows_aligned ? ceil_div(p.cols, Index(V)) : (p.cols + 2 * V - 2) / V;
    h.chunk = slots;
    plan.shape.gx = grid_1d(ceil_div(p.rows * slots, Index(kExprBlock / 32) * kExprSlotLanes * J));
    return plan;
  }
  // A block is tx x ty threads: tx, a power of two up to 256, covers a row's units, J each.
  const Index units = ceil_div(p.cols, Index(V));
  const Index per_row = ceil_div(units, Index(J));
  unsigned tx = 1;
  while (tx < per_row && tx < kExprBlock) tx <<= 1;
  const unsigned ty = kExprBlock / tx;
  plan.shape.bx = tx;
  plan.shape.by = ty;
  plan.shape.gx = grid_1d(ceil_div(units, Index(tx) * J));
  plan.shape.gy = static_cast<unsigned>(std::clamp<Index>(ceil_div(p.rows, Index(ty)), 1, 65535));
  return plan;
}

Plan plan_reduce(const Program& p, ReduceOp op, long long cap, int min_blocks) {
  Plan plan;
  const int V = reduce_vector(p);
  const Index n = p.rows * p.cols;
  const Paths paths = reduce_paths(p, V);
  plan.spec.kind = op == ReduceOp::min   ? KernelKind::reduce_min
                   : op == ReduceOp::max ? KernelKind::reduce_max
                                         : KernelKind::reduce_sum;
  plan.spec.flat = paths.flat;
  plan.spec.vec = paths.vec;
  plan.spec.min_blocks = static_cast<std::uint8_t>(std::clamp(min_blocks, 0, 32));
  plan.op = op;
  plan.spec.outline = has_transcendental(p);
  // launch_reduce's grid, exactly.
  const Index per_block = Index(kExprBlock) * kReduceUnroll * V;
  const Index grid = std::min<Index>(std::max<Index>(ceil_div(n, per_block), 1), std::max<long long>(cap, 1));
  ExprHead& h = plan.head;
  h.rows = p.rows;
  h.cols = p.cols;
  h.n = n;
  h.count = static_cast<double>(n);
  plan.shape.gx = static_cast<unsigned>(grid);
  if (grid == 1) {
    h.mode = op == ReduceOp::mean ? kExprMean : kExprFinal;
    return plan;
  }
  h.mode = kExprPartials;
  const std::size_t acc_size = op == ReduceOp::min || op == ReduceOp::max ? dtype_size(p.out_type) : 8;
  plan.partial_bytes = static_cast<std::size_t>(grid) * acc_size;
  plan.second = SecondPass::reduce;
  plan.count = grid;
  return plan;
}

Plan plan_row_sums(const Program& p, int sm_count) {
  Plan plan;
  if (p.rows <= 0) {
    plan.empty = true;
    return plan;
  }
  if (p.cols <= 0) {
    plan.zero_bytes = static_cast<std::size_t>(p.rows) * dtype_size(sum_dtype(p.out_type));
    return plan;
  }
  plan.spec.kind = KernelKind::row_sums;
  plan.spec.outline = has_transcendental(p);
  ExprHead& h = plan.head;
  h.rows = p.rows;
  h.cols = p.cols;
  h.n = p.rows * p.cols;
  if (p.cols < kRowBlockMinCols) {
    // A team of lanes per row, about 8 elements a lane, at most a warp.
    int lanes = 1;
    while (lanes < 32 && Index(lanes) * 8 < p.cols) lanes *= 2;
    h.team = lanes;
    plan.shape.gx = grid_1d(ceil_div(p.rows * lanes, Index(kExprBlock)));
    return plan;
  }
  // A block per row; rows split into chunks when there are too few to fill the device.
  const Index target = Index(std::max(sm_count, 1)) * kBlocksPerSm;
  Index chunks = p.rows < target ? std::min(ceil_div(target, p.rows), ceil_div(p.cols, kMinRowChunk)) : 1;
  chunks = std::max<Index>(chunks, 1);
  h.chunk = ceil_div(p.cols, chunks);
  h.chunks = chunks = ceil_div(p.cols, h.chunk);
  plan.shape.gx = grid_1d(p.rows * chunks);
  if (chunks > 1) {
    plan.partial_bytes = static_cast<std::size_t>(p.rows * chunks) * 8;
    plan.second = SecondPass::row_chunks;
    plan.count = p.rows;
    plan.chunks = chunks;
  }
  return plan;
}

Plan plan_col_sums(const Program& p, int sm_count) {
  Plan plan;
  if (p.cols <= 0) {
    plan.empty = true;
    return plan;
  }
  if (p.rows <= 0) {
    plan.zero_bytes = static_cast<std::size_t>(p.cols) * dtype_size(sum_dtype(p.out_type));
    return plan;
  }
  plan.spec.kind = KernelKind::col_sums;
  plan.spec.outline = has_transcendental(p);
  // 32 columns a block; row chunks (of at least 64 rows) until about two waves of blocks.
  const Index strips = ceil_div(p.cols, Index(32));
  const Index target = 2 * Index(std::max(sm_count, 1)) * kBlocksPerSm;
  Index chunks = std::clamp<Index>(ceil_div(target, strips), 1, std::max<Index>(p.rows / 64, 1));
  chunks = std::min<Index>(chunks, 65535);
  ExprHead& h = plan.head;
  h.rows = p.rows;
  h.cols = p.cols;
  h.n = p.rows * p.cols;
  h.chunk = ceil_div(p.rows, chunks);
  h.chunks = chunks = ceil_div(p.rows, h.chunk);
  plan.shape.gx = grid_1d(strips);
  plan.shape.gy = static_cast<unsigned>(chunks);
  if (chunks > 1) {
    plan.partial_bytes = static_cast<std::size_t>(chunks * p.cols) * 8;
    plan.second = SecondPass::col_chunks;
    plan.count = p.cols;
    plan.chunks = chunks;
  }
  return plan;
}

Plan plan_arg(const Program& p, bool max, int sm_count) {
  Plan plan;
  const Index n = p.rows * p.cols;
  if (n == 0) {
    plan.empty = true;
    return plan;
  }
  const int V = reduce_vector(p);
  const Paths paths = reduce_paths(p, V);
  plan.spec.kind = max ? KernelKind::arg_max : KernelKind::arg_min;
  plan.spec.flat = paths.flat;
  plan.spec.vec = paths.vec;
  plan.spec.outline = has_transcendental(p);
  // Any grid gives the same index (the combination is order-free): one wave of full blocks.
  const Index per_block = Index(kExprBlock) * kReduceUnroll * V;
  const Index grid = std::clamp<Index>(ceil_div(n, per_block), 1, Index(std::max(sm_count, 1)) * kBlocksPerSm);
  ExprHead& h = plan.head;
  h.rows = p.rows;
  h.cols = p.cols;
  h.n = n;
  plan.shape.gx = static_cast<unsigned>(grid);
  if (grid == 1) {
    h.mode = kExprFinal;
    return plan;
  }
  h.mode = kExprPartials;
  plan.index_offset = round_up(static_cast<std::size_t>(grid) * dtype_size(p.out_type), std::size_t(16));
  plan.partial_bytes = plan.index_offset + static_cast<std::size_t>(grid) * sizeof(Index);
  plan.second = SecondPass::arg;
  plan.count = grid;
  return plan;
}

ParamBlock::ParamBlock(const Program& p, const ExprHead& head) {
  const std::size_t nl = p.leaves.size(), ns = p.scalars.size();
  size_ = expr_params_bytes(nl, ns);
  if (size_ <= sizeof(small_)) {
    data_ = small_;
  } else {
    big_.resize((size_ + 7) / 8);
    data_ = reinterpret_cast<unsigned char*>(big_.data());
  }
  std::memset(data_, 0, size_);
  std::memcpy(data_, &head, sizeof(head));
  unsigned char* leaf = data_ + kExprHeadBytes;
  for (std::size_t k = 0; k < nl; ++k) {
    const ExprLeaf l{p.leaves[k].data, p.leaves[k].stride};
    std::memcpy(leaf + k * sizeof(ExprLeaf), &l, sizeof(l));
  }
  unsigned char* scalar = leaf + sizeof(ExprLeaf) * (nl ? nl : 1);
  for (std::size_t j = 0; j < ns; ++j) std::memcpy(scalar + 8 * j, &p.scalars[j], 8);
}

}  // namespace devmat::detail
