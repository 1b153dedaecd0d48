// The GEMM cost model (dispatch/gemm_cost_model.hpp): waves of CTAs over the SMs, occupancy,
// a partly filled last wave, and the traffic of split-K partial sums.
#include "dispatch/gemm_cost_model.hpp"

#include "dispatch/common.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace devmat::detail {

namespace {
// Architectures whose constants were calibrated, ascending. sm_90: an H200 (132 SMs, 1.98 GHz),
// from bench_gemm's per-configuration rows; only ratios between the configurations of one
// element type matter, and the split-K and wave terms (8192x8192x64 fits kWaveSeconds).
// Clusters (run U2a): 132 SMs in 8 GPCs of 16 or 18, taken as 16 whole SMs each; the cluster
// sum's 2 us a round is what wgmma-128x128x32-cl s=2 at 1000^3 (60.1 TFLOP/s) takes beyond
// the modelled main loop, and the packing is what makes its s=5 at 777^3 (5-CTA clusters: 120
// SMs, three rounds instead of two) as slow as measured (18.95 TFLOP/s, modelled 18.9).
const GemmArchModel kArchModels[] = {
    {90, {128 * 1.7e9, 128 * 1.7e9, 64 * 1.7e9}, 3.0e12, 2.5e-6, 4e-6, 16, 2e-6},
};

struct EfficiencyRow {
  int arch;
  GemmElement element;
  const char* config;
  double eff;
};
// The modelled rate of each configuration with the GPU full, as a fraction of fma_per_sm. sm_90:
// proportional to the TFLOP/s measured at 4096^3 on an H200 (float: 128x256x8 = 0.80; the
// 3xTF32 ones in units of the FFMA peak too).
const EfficiencyRow kEfficiency[] = {
    {90, GemmElement::f32, "128x128x8", 0.74},
    {90, GemmElement::f32, "128x256x8", 0.80},
    // 64x64x16 runs small and skinny products only, and one rate fits it badly: it runs 256^3 at
    // 3.65 TFLOP/s (s=4, runs T3 to U2a; modelled 2.9 here), 777^3 at 20.1 and 65536x64x64 at
    // 20.6 (modelled 21 and 30.6). 0.64 (its 4096^3 rate) was lowered to 0.55 for the latter two
    // (run U2a), which moved 256^3 to tf32x3-64x64x32 s=2: 2.89 TFLOP/s, 0.71 of cuBLAS (run V3).
    // 0.62 gives 256^3 back (modelled 2.6% ahead) and keeps 777^3 on the wgmma cluster tile and
    // 65536x64x64 on tf32x3r-128x64x32-2b (4.6% ahead), their measured winners.
    {90, GemmElement::f32, "64x64x16", 0.62},
    {90, GemmElement::f32, "64x256x16", 0.70},
    {90, GemmElement::f32, "tf32x3-128x64x32", 0.755},
    {90, GemmElement::f32, "tf32x3-64x128x32", 0.76},
    {90, GemmElement::f32, "tf32x3-64x256x32", 0.88},
    {90, GemmElement::f32, "tf32x3-64x64x32", 0.74},
    // The main-loop variants (kernels/gemm_mma.cuh): the row loop at two CTAs an SM (run U2a:
    // 23.62 TFLOP/s at 65536x64x64, the fastest there) and the fast split in the 128x128 tile
    // (53.8 TFLOP/s at 4096^3, the whole-tile exact split 48.6 at 0.90: the 21:35 run).
    {90, GemmElement::f32, "tf32x3r-128x64x32-2b", 0.755},
    {90, GemmElement::f32, "tf32x3f-128x128x32", 0.90},
    // The wgmma tile (sm_90a): 85.1 TFLOP/s at 4096^3 on the H200 (run S3, 00:33) against
    // tf32x3f's 53.8 at 0.90 (the same 128x128 tile, so the same waves): 0.90 * 85.1 / 53.8.
    // Above 1: the unit is the FFMA peak, which the tensor cores pass.
    {90, GemmElement::f32, "wgmma-128x128x32", 1.42},
    // The 64x128 wgmma tile (one consumer warpgroup, forced-only: never the fastest in run
    // U2a): a guess that sets its split counts in a forced run, below the 128x128 one (half the
    // MMAs per CTA beside the same producer, and B split for 64 rows instead of 128).
    {90, GemmElement::f32, "wgmma-64x128x32", 1.0},
    // The wgmma tiles whose k slices add up in a cluster: their base tile's rate (the same main
    // loop); what they save, the finalize kernel and the partial sums' traffic, is in
    // gemm_model_seconds.
    {90, GemmElement::f32, "wgmma-128x128x32-cl", 1.42},
    {90, GemmElement::f32, "wgmma-64x128x32-cl", 1.0},
    // The short-k tile (whole_k: k <= 128, one slice). Fit to session 35's forced rows (H100,
    // 16 products with k <= 128): from 0.60 to past 0.9 the model picks it on each of the 13
    // where it won (384x256x128 1.16 of cuBLAS, 2048x256x128 1.07 against tf32x3-64x64x32's
    // 0.93, 768x768x96 1.23 against 1.07) and keeps tf32x3-64x64x32 at 1024x1024x64 (1.05
    // against its 0.88); at 0.55 it leaves 2048x256x128 on the 64x64 tile. The 32x64 and 64x32
    // tiles (forced-only): their 64x64 neighbour's rate less its edge, a guess.
    {90, GemmElement::f32, "tf32x3-32x32x32", 0.60},
    {90, GemmElement::f32, "tf32x3-32x64x32", 0.62},
    {90, GemmElement::f32, "tf32x3-64x32x32", 0.62},
    // The narrow CUDA-core tiles (narrow_side: n <= 16 or m <= 16), a first guess below the
    // 64x64 tile's rate: a thread's 4x4 results take two 16-byte shared loads a k step.
    {90, GemmElement::f32, "128x16x16", 0.55},
    {90, GemmElement::f32, "16x128x16", 0.55},
    {90, GemmElement::i32, "128x128x8", 0.78},
    {90, GemmElement::i32, "64x64x16", 0.62},
    {90, GemmElement::f64, "128x128x16", 0.72},
    {90, GemmElement::f64, "128x64x16", 0.70},
    {90, GemmElement::f64, "64x64x16", 0.52},
    // The pipelined DMMA tiles (gemm_dmma.cuh): TFLOP/s at 4096^3 / 53.5, as the rows above, from
    // bench_gemm's forced ours-pipe-* rows in two processes on one H200 (session 32, after whole
    // k tiles began to copy without bounds: the old library in a third process there ran the
    // rates this table had before, within 0.02). The cluster-summed tiles take their base tiles'
    // rates (the same main loop; their sum is the model's cluster_sum_seconds): measured 1.017
    // and 1.038 against 1.020 and 1.046. pipe-64x64x32-k16 (0.970 measured) is put below
    // pipe-64x64x16-k8, which beat it where the two lead, at 1000^3 (0.892 of cuBLAS against
    // 0.810) and 1024^3 (0.970 against 0.952), the same run.
    {90, GemmElement::f64, "pipe-128x128x16-k4", 1.079},
    {90, GemmElement::f64, "pipe-128x128x16-k4-w16", 1.020},
    {90, GemmElement::f64, "pipe-128x128x32-k4-w16", 1.046},
    {90, GemmElement::f64, "pipe-128x128x32-k8", 1.092},
    {90, GemmElement::f64, "pipe-128x64x16-k4-w8", 0.974},
    {90, GemmElement::f64, "pipe-64x64x16-k8", 0.961},
    {90, GemmElement::f64, "pipe-64x64x32-k16", 0.955},
    {90, GemmElement::f64, "pipe-128x128x16-k4-w16-cl", 1.020},
    {90, GemmElement::f64, "pipe-128x128x32-k4-w16-cl", 1.046},
};

/// The calibrated architecture used for `arch`: the highest one not above it, else the lowest.
int calibrated_arch(int arch) {
  int best = kArchModels[0].arch;
  for (const GemmArchModel& m : kArchModels)
    if (m.arch <= arch) best = m.arch;
  return best;
}
}  // namespace

const GemmArchModel& gemm_arch_model(int arch) {
  const int a = calibrated_arch(arch);
  for (const GemmArchModel& m : kArchModels)
    if (m.arch == a) return m;
  return kArchModels[0];
}

double gemm_efficiency(GemmElement element, const std::string& config, int arch) {
  const int a = calibrated_arch(arch);
  for (const EfficiencyRow& r : kEfficiency)
    if (r.arch == a && r.element == element && config == r.config) return r.eff;
  return kGemmUnknownEfficiency;
}

int gemm_min_split_k(int bk, bool latency_bound) { return latency_bound ? bk : std::max(4 * bk, 64); }

int gemm_effective_splits(int k, int bk, int splits) {
  const long long k_tiles = ceil_div(static_cast<long long>(k), bk);
  const long long per = ceil_div(k_tiles, std::max(1, splits));
  return static_cast<int>(ceil_div(k_tiles, per));
}

GemmSlices gemm_slices(long long k, int bk, int splits) {
  const long long k_tiles = std::max<long long>(1, ceil_div(k, static_cast<long long>(bk)));
  const long long per = ceil_div(k_tiles, static_cast<long long>(std::max(1, splits)));
  return {per, static_cast<int>(ceil_div(k_tiles, per))};
}

int gemm_cluster_sms(const GemmArchModel& model, int sms, int occ, int cluster) {
  if (cluster <= 1) return sms;
  const int per_gpc = std::min(sms, model.sms_per_gpc);
  const int gpcs = std::max(1, sms / std::max(1, per_gpc));
  const int clusters = per_gpc * occ / cluster;  // whole clusters a GPC holds
  return std::max(1, gpcs * clusters * cluster / occ);
}

GemmTail gemm_tail_plan(const GemmArchModel& model, long long tiles, int sms, int occ, long long k, int bk,
                        int max_splits) {
  const long long round = static_cast<long long>(sms) * occ;
  const long long rem = tiles % round;
  if (tiles <= round || rem == 0 || 2 * rem > round) return {tiles, 1};
  int s = static_cast<int>(std::min<long long>({max_splits, round / rem, std::max<long long>(1, k / gemm_min_split_k(bk))}));
  while (s > 1 && rem * s > static_cast<long long>(gemm_cluster_sms(model, sms, occ, s)) * occ) --s;
  s = gemm_slices(k, bk, s).splits;
  return s > 1 ? GemmTail{tiles - rem, s} : GemmTail{tiles, 1};
}

namespace {
/// Whether `p` is latency-bound (below kGemmTf32MinFma multiply-adds): it stays on the CUDA
/// cores (or a whole_k tile), and its k may be cut down to slices of one k tile
/// (gemm_min_split_k).
bool gemm_latency_bound(const GemmProblem& p) { return static_cast<double>(p.m) * p.n * p.k < kGemmTf32MinFma; }

/// Output tiles of configuration `c` over an m x n result.
long long gemm_output_tiles(long long m, long long n, const GemmConfigInfo& c) {
  return ceil_div(m, c.bm) * ceil_div(n, c.bn);
}

/// Seconds of one launch of `ctas` CTAs of `work` multiply-adds each at `rate` per SM, over
/// `usable` SMs that hold `occ` CTAs each, in rounds; `rounds` gets the CTAs' rounds.
double rounds_seconds(const GemmArchModel& model, long long ctas, double work, double rate, long long usable, int occ,
                      long long& rounds) {
  const long long per_sm = ceil_div(ctas, usable);  // CTAs the busiest SM runs
  const long long full = per_sm / occ, rem = per_sm % occ;
  rounds = ceil_div(per_sm, static_cast<long long>(occ));
  // A round of `occ` CTAs runs at the configuration's full rate, and each CTA's fill and
  // epilogue overlap the others' work; a last round of rem < occ CTAs hides less latency:
  // (rem/occ)^0.6 of that throughput, shared by rem CTAs, and a whole fill and epilogue.
  double t = static_cast<double>(full) * (occ * work / rate + model.wave_seconds / occ);
  if (rem)
    t += static_cast<double>(rem) * work / (rate * std::pow(static_cast<double>(rem) / occ, 0.6)) +
         model.wave_seconds;
  return t;
}
}  // namespace

double gemm_model_seconds(const GemmArchModel& model, GemmElement element, const GemmConfigInfo& c, double eff,
                          long long m, long long n, long long k, int splits, int sms, int occ) {
  const std::size_t elem_bytes = element == GemmElement::f64 ? 8 : 4;
  const long long tiles = gemm_output_tiles(m, n, c);
  const double rate = model.fma_per_sm[static_cast<int>(element)] * eff;
  const auto slice_work = [&](const GemmSlices& s) { return static_cast<double>(c.bm) * c.bn * static_cast<double>(s.per_split * c.bk); };
  long long rounds = 0;
  if (c.tail_split && c.cluster_splits > 0 && splits <= 1) {
    const GemmTail tail = gemm_tail_plan(model, tiles, sms, occ, k, c.bk, c.cluster_splits);
    if (tail.splits > 1) {
      // Whole rounds unsplit, then the tail's slices in clusters: one more launch, one round.
      const GemmSlices tail_slices = gemm_slices(k, c.bk, tail.splits);
      const long long tail_ctas = (tiles - tail.main_tiles) * tail_slices.splits;
      return rounds_seconds(model, tail.main_tiles, slice_work(gemm_slices(k, c.bk, 1)), rate, sms, occ, rounds) +
             model.launch_seconds +
             rounds_seconds(model, tail_ctas, slice_work(tail_slices), rate,
                            gemm_cluster_sms(model, sms, occ, tail_slices.splits), occ, rounds) +
             static_cast<double>(rounds) * model.cluster_sum_seconds;
    }
  }
  const GemmSlices slices = gemm_slices(k, c.bk, splits);
  const long long ctas = tiles * slices.splits;
  // CTAs per cluster: the k slices of a cluster-summed tile.
  const long long cluster = c.cluster_splits > 0 ? slices.splits : 1;
  const long long usable = cluster > 1 ? gemm_cluster_sms(model, sms, occ, static_cast<int>(cluster)) : sms;
  double t = rounds_seconds(model, ctas, slice_work(slices), rate, usable, occ, rounds);
  // Split-K: the slices' partial sums are written while the kernel computes; the finalize
  // kernel reads them and writes C. Slices that add up in a cluster (cluster_splits) cost
  // neither: their sums travel through distributed shared memory inside the kernel.
  if (c.cluster_splits > 0 && slices.splits > 1) t += static_cast<double>(rounds) * model.cluster_sum_seconds;
  if (splits > 1 && splits > c.cluster_splits)
    t += model.launch_seconds +
         static_cast<double>(splits + 1) * static_cast<double>(m * n) * elem_bytes / model.bytes_per_second;
  return t;
}

double gemm_pad_seconds(const GemmArchModel& model, const GemmProblem& p, const GemmConfigInfo& c) {
  if (!c.aligned_rows || static_cast<double>(p.m) * p.n * p.k >= kPadMinFma) return 0.0;
  const double elem_bytes = p.element == GemmElement::f64 ? 8.0 : 4.0;
  const auto copy = [&](long long elements) {
    return model.launch_seconds + 2.0 * static_cast<double>(elements) * elem_bytes / model.bytes_per_second;
  };
  double t = 0.0;
  if (!p.a_rows_aligned) t += copy(static_cast<long long>(p.m) * p.k);
  if (!p.b_rows_aligned) t += copy(static_cast<long long>(p.k) * p.n);
  return t;
}

std::pair<int, double> gemm_best_splits(const GemmProblem& p, const GemmConfigInfo& c, int occ, const GemmDevice& dev) {
  const GemmArchModel& model = gemm_arch_model(dev.arch);
  const double eff = gemm_efficiency(p.element, c.name, dev.arch);
  const long long elem_bytes = p.element == GemmElement::f64 ? 8 : 4;
  // A short-k tile (whole_k) runs one slice: two lost to one wherever measured (128x128x128
  // 0.87 against 1.12 of cuBLAS, 384x256x128 0.82 against 1.16).
  int max_by_k = c.whole_k > 0 ? 1 : std::max(1, p.k / gemm_min_split_k(c.bk, gemm_latency_bound(p)));
  // The CUDA-core 64x64 tiles where their tiles and slices of the usual minimum leave SMs idle:
  // slices down to two k tiles. Session 34 (H100, one process, forced, of cuBLAS; the plan
  // before -> after): 256^3 s=4 0.836 -> s=8 1.003, 128x256x512 s=8 0.844 -> s=16 1.010,
  // 256x128x512 0.841 -> 1.013, 128x512x256 s=4 0.840 -> s=8 1.003, 512x128x256 0.876 -> 1.050,
  // 64x256x1024 s=16 0.918 -> s=32 1.015, 256x64x1024 0.882 -> 0.995, 100x64x2048 s=32 1.128 ->
  // s=64 1.210, 192x64x2048 0.906 -> s=43 0.949; more slices than these rules give won as well
  // (384x64x256 s=16 1.052, 192x128x512 s=32 1.128), but 16x512x1024 at s=64 (0.866 against
  // s=16's 0.889). The same relaxation for every tile (the 128x128 and 64x256 ones, 3xTF32)
  // moved plans to big tiles in many slices, which lost up to 28% (384x64x1024 on 128x128x8
  // s=64 0.642 against 0.897), and to 3xTF32 tiles unmeasured in short slices. The i32 64x64
  // tile (the same CUDA-core kernel on integers) follows it, not measured.
  const long long tiles = gemm_output_tiles(p.m, p.n, c);
  if (c.math == GemmMath::simt && c.bm * c.bn <= 64 * 64 && tiles * max_by_k < dev.sm_count)
    max_by_k = std::max(max_by_k, p.k / (2 * c.bk));
  // Partial sums in a workspace of at most 1 GiB.
  const long long max_by_ws = std::max<long long>(1, (1ll << 30) / (static_cast<long long>(p.m) * p.n * elem_bytes));
  // Past kGemmMaxSplits only where its slices leave SMs idle (the output tiles times 64 under
  // the SM count) and each slice keeps at least 512 of k: then up to a slice for every CTA the
  // device holds at once. Run S23 (H200, of cuBLAS, 64 slices forced -> the plan now):
  // 64x64x10^6 0.570 -> 1.405 (263 slices), 128x128x500000 0.970 -> 1.781 (132), 100x100x10^5
  // 0.999 -> 1.641 (131), 16x16x10^6 on the narrow tile 0.311 -> 0.845 (526), 33x33x150001
  // 0.497 -> 0.877-1.074 (261, 575 k a slice: the shortest measured, hence the 512). Without
  // that floor the model took shorter k to hundreds of slices of a few k tiles, unmeasured
  // (2x2x2048 on 128x128x8 at 256 slices of 8 k), so below a k of 64 x 512 the cap stays 64.
  long long max_by_fill = kGemmMaxSplits;
  if (tiles * kGemmMaxSplits < dev.sm_count)
    max_by_fill = std::clamp<long long>(
        std::min<long long>(static_cast<long long>(dev.sm_count) * std::max(1, occ) / tiles, p.k / kGemmMinSliceKPastMax),
        kGemmMaxSplits, 65535);  // 65535: gridDim.z
  const long long max_by_cluster = c.cluster_splits > 0 ? c.cluster_splits : max_by_fill;
  const int max_splits = static_cast<int>(std::min<long long>({max_by_fill, max_by_k, max_by_ws, max_by_cluster}));
  const auto seconds = [&](int s) {
    return gemm_model_seconds(model, p.element, c, eff, p.m, p.n, p.k, s, dev.sm_count, occ);
  };
  int best = 1;
  double best_t = seconds(1);
  for (int s = 2; s <= max_splits; ++s) {
    if (gemm_effective_splits(p.k, c.bk, s) != s) continue;  // the same as a smaller count
    const double t = seconds(s);
    // A split must buy something; slices summed in a cluster (cheaper in the model than the
    // data have shown outside 777^3-1024^3) 5%, past the spread between runs.
    const double bar = c.cluster_splits > 0 ? 0.95 : 0.98;
    if (t < best_t * bar) best = s, best_t = t;
  }
  return {best, best_t};
}

GemmPlan plan_gemm(const GemmProblem& p, const std::vector<GemmConfigInfo>& configs,
                   const std::function<int(int)>& blocks_per_sm, const GemmDevice& dev, int forced_config,
                   int forced_splits) {
  GemmPlan plan;
  if (p.k <= 0 || p.m <= 0 || p.n <= 0) return plan;
  if (forced_config < 0 && (p.m == 1 || p.n == 1)) {
    // m == 1: y = x op(B), the matrix is B; n == 1: y = op(A) x, the matrix is A.
    const bool rows = p.m == 1 ? p.b_kcontig : p.a_kcontig;
    plan.kind = rows ? GemmPlanKind::gemv_rows : GemmPlanKind::gemv_cols;
    return plan;
  }
  plan.kind = GemmPlanKind::tiled;
  if (forced_config >= 0) {
    const GemmConfigInfo& c = configs.at(static_cast<std::size_t>(forced_config));
    const int occ = blocks_per_sm(forced_config);
    if (occ <= 0)
      throw std::invalid_argument("devmat: gemm_forced: configuration " + c.name +
                                  " does not fit this device (shared memory per block, or clusters before sm_90)");
    plan.config = forced_config;
    const int max_forced = c.cluster_splits > 0 ? c.cluster_splits : 65535;
    plan.splits = forced_splits > 0 ? gemm_effective_splits(p.k, c.bk, std::min(forced_splits, max_forced))
                                    : gemm_best_splits(p, c, occ, dev).first;
    return plan;
  }
  const bool tf32 = p.tf32_allowed && dev.arch >= 80;  // the TF32 MMA exists from sm_80 on
  const bool tiny = gemm_latency_bound(p);
  double best_t = 0;
  bool found = false;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    const GemmConfigInfo& c = configs[i];
    if (!c.automatic || (c.math == GemmMath::tf32x3 && (!tf32 || (tiny && c.whole_k == 0)))) continue;
    // A short-k tile (whole_k): its CTAs issue the copies of all of k before their first MMA,
    // which beats the CUDA cores on latency-bound products too. Session 35, H100, of cuBLAS, forced
    // one slice against the plan then: 384x256x128 1.16 (0.63), 64x2048x128 1.43 (0.71),
    // 192x512x64 1.16 (0.68), 128x128x128 1.12 (0.75, 64x64x16 s=8), 64x512x64 1.15 (0.64).
    if (c.whole_k > 0 && p.k > c.whole_k) continue;
    if (c.only_arch != 0 && c.only_arch != dev.arch) continue;  // no code for this device
    if (c.cluster_splits > 0 && dev.arch < 90) continue;  // thread-block clusters: sm_90 on
    const int occ = blocks_per_sm(i);
    if (occ <= 0) continue;  // does not fit this device
    // ... and within one round of its CTAs, unless m or n fits one tile (where every larger tile
    // wastes half its work or more). Past a round it lost to the plans of before, which the
    // model priced slower (same run, of cuBLAS): 640x2048x32 0.852 (tf32x3r-128x64x32-2b
    // 0.895), 2048x640x64 0.847 (wgmma-128x128x32 1.035), 640x4096x64 0.792 (0.928),
    // 4096x640x32 0.946 (128x128x8 1.058); 65536x16x128 0.826 and 16x65536x128 0.860 beat them
    // (0.619, 0.710). In one round it won everywhere measured: 640x1024x64 (640 tiles) 1.077
    // against 0.927, 128x4096x128 1.022 against 0.950, 47x804x53 1.673 against 0.952.
    if (c.whole_k > 0 && p.m > c.bm && p.n > c.bn &&
        gemm_output_tiles(p.m, p.n, c) > static_cast<long long>(dev.sm_count) * occ)
      continue;
    // A narrow tile where its narrow side fits it; the short-wide one (bm < bn) also only where B
    // is not k-contiguous: its B tile (the operand that streams) then comes in 16-byte copies,
    // not in the transposing copy of one element at a time, with which the tall tile ran 0.55 to
    // 0.76 of cuBLAS before it got its [m][k] A tile (session 36, H100).
    if (c.narrow_side && (c.bm < c.bn ? p.m > c.bm || p.b_kcontig : p.n > c.bn)) continue;
    auto [s, t] = gemm_best_splits(p, c, occ, dev);
    t += gemm_pad_seconds(gemm_arch_model(dev.arch), p, c);
    if (!found || t < best_t) plan.config = i, plan.splits = s, best_t = t, found = true;
  }
  return plan;
}

}  // namespace devmat::detail
