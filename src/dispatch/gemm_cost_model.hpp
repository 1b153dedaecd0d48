// The GEMM cost model: which compiled-in tile configuration, and how many k slices, an m x n x k
// product runs with. Pure host code: the device's properties and each configuration's occupancy
// are inputs, so the model is unit-tested on a machine without a GPU (test/test_gemm_model.cpp).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace devmat::detail {

/// The element types that have GEMM kernels.
enum class GemmElement { f32, f64, i32 };

/// How a tiled configuration computes: CUDA-core FMA, 3xTF32 or FP64 tensor cores.
enum class GemmMath { simt, tf32x3, dmma };

/// One tiled kernel configuration compiled into libdevmat, as the host sees it.
struct GemmConfigInfo {
  std::string name;  // e.g. "128x128x8" (BMxBNxBK) plus a prefix or suffix where two differ otherwise
  int bm, bn, bk;    // block tile
  int threads;       // threads per block (1-D)
  int stages;        // cp.async pipeline depth
  GemmMath math;
  bool automatic = true;  // gemm may pick it; false: a variant only gemm_forced runs (to be measured)
  bool aligned_rows = false;  // reads operands in 16-byte chunks only: gemm pads rows that break them
  int only_arch = 0;          // nonzero: runs on that compute capability alone (sm_90a code: 90)
  // Nonzero: up to this many k slices add up inside the kernel, across a thread-block cluster
  // (sm_90 on), in slice order: no partial-sum workspace and no finalize kernel. The model
  // caps its split counts there, and a forced count is clamped to it.
  int cluster_splits = 0;
  // With one k slice: whole rounds of tiles in one launch, and the tiles of a last round that
  // leaves most SMs idle in a second one, their k cut in cluster-summed slices (gemm_tail_plan).
  // Needs cluster_splits.
  bool tail_split = false;
  // Nonzero: gemm picks this configuration only for products with k <= whole_k, in one k slice,
  // and within one round of its CTAs unless m or n fits one tile (a small tile whose CTAs issue
  // the copies of all of such a k before their first MMA; measured there alone). It may then
  // take latency-bound products too. gemm_forced runs it at any k and slice count.
  int whole_k = 0;
  // A tile narrow along m (bm < bn) or n (bn < bm), for products whose narrow side fits it: gemm
  // picks it only where m <= bm (or n <= bn), so no operand is read by more than one row (or
  // column) of tiles, which the model does not price; the short-wide one only where B is not
  // k-contiguous (plan_gemm). gemm_forced runs it on any shape.
  bool narrow_side = false;
};

/// What the model knows of the device.
struct GemmDevice {
  int sm_count;
  int arch;  // compute capability as one number: 90 for sm_90
};

/// The product to plan. `a_kcontig`: op(A) is A (A's rows run along k); `b_kcontig`: op(B) is
/// B^T. `tf32_allowed`: FloatMath::tf32x3 is selected (the model also needs sm_80 or later).
struct GemmProblem {
  GemmElement element;
  int m, n, k;
  bool a_kcontig, b_kcontig;
  bool tf32_allowed = true;
  // The operands' rows allow 16-byte reads (ptr and ld): an aligned_rows configuration costs
  // row-padded copies of those that do not (gemm_pad_seconds).
  bool a_rows_aligned = true, b_rows_aligned = true;
};

enum class GemmPlanKind { none, gemv_rows, gemv_cols, tiled };

struct GemmPlan {
  GemmPlanKind kind = GemmPlanKind::none;
  int config = 0;  // index into the configurations (tiled)
  int splits = 1;  // k slices (tiled)
};

/// The model's constants for one architecture, calibrated on a GPU of it (see the .cpp).
struct GemmArchModel {
  int arch;
  double fma_per_sm[3];     // multiply-adds per second per SM at peak, by GemmElement
  double bytes_per_second;  // device memory, achieved
  double launch_seconds;    // one more kernel in the stream
  double wave_seconds;      // pipeline fill and epilogue of one round of CTAs
  // Thread-block clusters are placed inside one GPC: a GPC of `sms_per_gpc` SMs holds whole
  // clusters only, so clusters of 3, 5, 6 or 7 CTAs leave some of its SMs idle.
  int sms_per_gpc;
  double cluster_sum_seconds;  // adding a round's k slices up inside a cluster (DSMEM, barriers)
};

/// The model of `arch`: the calibrated architecture nearest below it (the lowest one for an
/// older device). Today sm_90 (an H200) is the one calibrated; others use its constants.
const GemmArchModel& gemm_arch_model(int arch);

/// A configuration's modelled rate with every SM full of it, as a fraction of fma_per_sm, on
/// `arch` (same fallback as gemm_arch_model; kGemmUnknownEfficiency for a name the table does
/// not know, which the tests rule out for every registered configuration).
double gemm_efficiency(GemmElement element, const std::string& config, int arch);
constexpr double kGemmUnknownEfficiency = 0.5;

/// k slices of at least this many k (a shorter slice is mostly pipeline fill; gemm_best_splits
/// allows two k tiles to the CUDA-core 64x64 tile where its grid leaves SMs idle), or of one k tile
/// where the product is latency-bound (below kGemmTf32MinFma multiply-adds: a few CTAs, each
/// one's k loop is the time; H200, 47x53x804 on 64x64x16, one tile split 11 ways (5 k tiles a
/// slice) ran 0.81 of cuBLAS, 13 ways (4) 0.89, every k tile less about 0.1 of cuBLAS's time).
int gemm_min_split_k(int bk, bool latency_bound = false);
/// `splits` rounded to what the k tiles allow: every slice has ceil(k_tiles / splits) tiles.
int gemm_effective_splits(int k, int bk, int splits);

/// How run_tiled cuts k for a configuration of BK `bk` with `splits` slices asked for: slices
/// of `per_split` k tiles each (the last one shorter, none empty), `splits` rounded as
/// gemm_effective_splits rounds it.
struct GemmSlices {
  long long per_split;  // k tiles of one CTA's slice
  int splits;           // k slices (one: no workspace)
};
GemmSlices gemm_slices(long long k, int bk, int splits);

/// The SMs that clusters of `cluster` CTAs (`occ` of them resident per SM) can fill: each of the
/// sms / sms_per_gpc GPCs holds whole clusters only (all `sms` for cluster <= 1).
int gemm_cluster_sms(const GemmArchModel& model, int sms, int occ, int cluster);

/// A tail split (GemmConfigInfo::tail_split) of `tiles` output tiles, `occ` CTAs resident per
/// SM: the first launch runs `main_tiles` (whole rounds of sms * occ tiles, one k slice each);
/// the rest, a last round that would leave at least half of the SMs idle, run in a second
/// launch with k cut in `splits` slices (at most max_splits, slices of gemm_min_split_k or
/// more) that add up in a cluster, as many as the idle SMs hold in whole clusters. splits == 1:
/// no tail launch (main_tiles == tiles).
struct GemmTail {
  long long main_tiles;
  int splits;
};
GemmTail gemm_tail_plan(const GemmArchModel& model, long long tiles, int sms, int occ, long long k, int bk,
                        int max_splits);

/// Modelled seconds of one configuration with `splits` k slices, `blocks_per_sm` of its CTAs
/// resident per SM.
double gemm_model_seconds(const GemmArchModel& model, GemmElement element, const GemmConfigInfo& c, double eff,
                          long long m, long long n, long long k, int splits, int sms, int blocks_per_sm);

/// Products of at least this many multiply-adds run on row-padded copies of operands whose rows
/// break 16-byte alignment, whatever the configuration (the copies then cost under a few
/// percent of the product); below it only aligned_rows configurations get them.
constexpr double kPadMinFma = 1 << 30;

/// Modelled seconds of the row-padded operand copies that configuration `c` needs for `p` and
/// that the others do not (0 unless c.aligned_rows, an operand's rows are unaligned, and the
/// product is below kPadMinFma): per copy one more kernel and its bytes read and written.
double gemm_pad_seconds(const GemmArchModel& model, const GemmProblem& p, const GemmConfigInfo& c);

/// Whether gemm may pick the wgmma tile that sums its k slices in a thread-block cluster
/// ("wgmma-128x128x32-cl") on its own: the model then takes it wherever its slices without a
/// finalize kernel are modelled faster (latency-bound and wave-quantised shapes). Run U2a: s=2
/// at 1000^3, 60.1 TFLOP/s against the plain tile's 53.6, cuBLAS 33.9. "wgmma-64x128x32-cl"
/// stays forced-only, never the fastest where measured.
inline constexpr bool kGemmClusterSplitKWgmma = true;

/// Whether gemm may pick the DMMA tiles that sum their k slices in a cluster
/// ("pipe-128x128x16-k4-w16-cl", "pipe-128x128x32-k4-w16-cl"; tail_split too) on its own,
/// wherever the model takes them for faster than their base tiles (their rates in
/// gemm_cost_model.cpp are their base tiles'). H200, session 10, of cuBLAS DGEMM, before ->
/// forced: 1000^3 0.848 -> 0.876-0.887 (2 slices), 1024^3 0.836 -> 0.847-0.866 (2 slices),
/// 4096^3 0.958 -> 0.961-0.969, 8192^3 0.869 -> 0.895 (the last round's tiles in 8 slices);
/// 2048^3 the same (0.88).
inline constexpr bool kGemmClusterSplitKDmma = true;

/// Products below this many multiply-adds are latency-bound: they run on the CUDA cores, or on a
/// short-k tile (GemmConfigInfo::whole_k) where their k fits it.
constexpr double kGemmTf32MinFma = 1 << 22;
constexpr int kGemmMaxSplits = 64;
/// Past kGemmMaxSplits, the fewest k a slice keeps (gemm_best_splits).
constexpr int kGemmMinSliceKPastMax = 512;

/// The plan for `p` among `configs` (all of p.element) on `dev`; `blocks_per_sm(i)` gives the
/// occupancy of configuration i and is called only for candidates (configurations that are
/// `automatic`; 0: it does not fit the device, so it is never chosen, and forcing it throws
/// std::invalid_argument). m == 1 or n == 1 are GEMVs,
/// k == 0 (or an empty output) is none. `forced_config` >= 0 picks that configuration (and no
/// GEMV); `forced_splits` > 0 its split count (else the model's best for it).
GemmPlan plan_gemm(const GemmProblem& p, const std::vector<GemmConfigInfo>& configs,
                   const std::function<int(int)>& blocks_per_sm, const GemmDevice& dev, int forced_config = -1,
                   int forced_splits = 0);

/// The best split count for one configuration and its modelled time.
std::pair<int, double> gemm_best_splits(const GemmProblem& p, const GemmConfigInfo& c, int blocks_per_sm,
                                        const GemmDevice& dev);

}  // namespace devmat::detail
