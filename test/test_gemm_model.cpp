// Host test: the GEMM cost model (src/dispatch/gemm_cost_model.hpp) is plain host code whose
// inputs are the device's properties and each configuration's occupancy, so its rules are
// checked here, on synthetic devices, with no GPU. What it picks on a real card is measured by
// bench_gemm, not asserted.
#include "support/catch.hpp"

#include "dispatch/gemm_cost_model.hpp"
#include "dispatch/gemm_tuning.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using namespace devmat::detail;

namespace {

const GemmDevice kH200{132, 90};

/// The float configurations as the library registers them (no device is touched).
const std::vector<GemmConfigInfo>& f32_configs() {
  static const std::vector<GemmConfigInfo> v = gemm_configs<float>();
  return v;
}

/// Occupancy as on an H200: two CTAs per SM for the small tiles, one for the others.
int h200_occupancy(const std::vector<GemmConfigInfo>& configs, int i) {
  const GemmConfigInfo& c = configs[static_cast<std::size_t>(i)];
  return c.bm * c.bn <= 64 * 64 ? 2 : 1;
}

GemmPlan plan_f32(int m, int n, int k, bool tf32 = true, GemmDevice dev = kH200) {
  const auto& configs = f32_configs();
  const GemmProblem p{GemmElement::f32, m, n, k, true, false, tf32};
  return plan_gemm(p, configs, [&](int i) { return h200_occupancy(configs, i); }, dev);
}

const GemmConfigInfo& config_of(const GemmPlan& p) { return f32_configs()[static_cast<std::size_t>(p.config)]; }

}  // namespace

TEST_CASE("gemm model: every registered configuration has a calibrated efficiency") {
  const auto check = [](GemmElement e, const std::vector<GemmConfigInfo>& configs) {
    REQUIRE(!configs.empty());
    for (const GemmConfigInfo& c : configs) {
      CAPTURE(c.name);
      const double eff = gemm_efficiency(e, c.name, 90);
      CHECK(eff != kGemmUnknownEfficiency);
      CHECK(eff > 0.0);
      // In units of the FMA peak on the CUDA cores: only tensor-core math may pass it (wgmma's
      // float; DMMA's double, whose peak on sm_90 is twice the FP64 FMA peak).
      CHECK(eff <= (c.math == GemmMath::simt ? 1.0 : 2.0));
      CHECK(c.threads % 32 == 0);
      CHECK(c.stages >= 2);
    }
  };
  check(GemmElement::f32, gemm_configs<float>());
  check(GemmElement::f64, gemm_configs<double>());
  check(GemmElement::i32, gemm_configs<std::int32_t>());
  CHECK(gemm_efficiency(GemmElement::f32, "no-such-config", 90) == kGemmUnknownEfficiency);
}

TEST_CASE("gemm model: architectures without their own calibration use the nearest one") {
  CHECK(gemm_arch_model(90).arch == 90);
  CHECK(gemm_arch_model(100).arch == 90);  // newer: the newest calibrated below it
  CHECK(gemm_arch_model(80).arch == 90);   // older than any: the oldest calibrated
  CHECK(gemm_efficiency(GemmElement::f64, "128x128x16", 120) == gemm_efficiency(GemmElement::f64, "128x128x16", 90));
}

TEST_CASE("gemm model: empty products, k == 0 and vectors") {
  CHECK(plan_f32(0, 10, 10).kind == GemmPlanKind::none);
  CHECK(plan_f32(10, 0, 10).kind == GemmPlanKind::none);
  CHECK(plan_f32(10, 10, 0).kind == GemmPlanKind::none);
  const auto& configs = f32_configs();
  const auto occ = [&](int i) { return h200_occupancy(configs, i); };
  // m == 1: y = x op(B); B^T read along its rows is the row GEMV, B itself the column one.
  CHECK(plan_gemm({GemmElement::f32, 1, 500, 300, true, false}, configs, occ, kH200).kind == GemmPlanKind::gemv_cols);
  CHECK(plan_gemm({GemmElement::f32, 1, 500, 300, true, true}, configs, occ, kH200).kind == GemmPlanKind::gemv_rows);
  // n == 1: y = op(A) x; A read along its rows is the row GEMV.
  CHECK(plan_gemm({GemmElement::f32, 500, 1, 300, true, false}, configs, occ, kH200).kind == GemmPlanKind::gemv_rows);
  CHECK(plan_gemm({GemmElement::f32, 500, 1, 300, false, false}, configs, occ, kH200).kind == GemmPlanKind::gemv_cols);
  // A forced configuration is tiled even for a vector.
  const GemmPlan forced = plan_gemm({GemmElement::f32, 1, 500, 300, true, false}, configs, occ, kH200, 2, 0);
  CHECK(forced.kind == GemmPlanKind::tiled);
  CHECK(forced.config == 2);
}

TEST_CASE("gemm model: a configuration that does not fit the device (occupancy 0) is never chosen") {
  const auto& configs = f32_configs();
  const GemmProblem prob{GemmElement::f32, 4096, 4096, 4096, true, false};
  const auto occ = [&](int i) { return h200_occupancy(configs, i); };
  const GemmPlan best = plan_gemm(prob, configs, occ, kH200);
  REQUIRE(best.kind == GemmPlanKind::tiled);
  // The same device without room for the winner: another configuration runs.
  const auto without = [&](int i) { return i == best.config ? 0 : occ(i); };
  const GemmPlan other = plan_gemm(prob, configs, without, kH200);
  CHECK(other.kind == GemmPlanKind::tiled);
  CHECK(other.config != best.config);
  // Forcing it says why, before anything runs.
  CHECK_THROWS_AS(plan_gemm(prob, configs, without, kH200, best.config, 0), std::invalid_argument);
  CHECK_THROWS_AS(plan_gemm(prob, configs, without, kH200, best.config, 2), std::invalid_argument);
}

TEST_CASE("gemm model: 3xTF32 only where allowed, available and worth it") {
  const auto is_tf32 = [](const GemmPlan& p) { return config_of(p).math == GemmMath::tf32x3; };
  // A large product on sm_80+ with tf32x3 selected runs on the tensor cores ...
  CHECK(is_tf32(plan_f32(4096, 4096, 4096)));
  CHECK(is_tf32(plan_f32(4096, 4096, 4096, true, GemmDevice{108, 80})));
  // ... never under FloatMath::simt, never before sm_80, never for a latency-bound product
  // but on the short-k tile (GemmConfigInfo::whole_k), whose k is at most 128.
  CHECK_FALSE(is_tf32(plan_f32(4096, 4096, 4096, false)));
  CHECK_FALSE(is_tf32(plan_f32(4096, 4096, 4096, true, GemmDevice{80, 75})));
  CHECK(static_cast<double>(100) * 100 * 100 < kGemmTf32MinFma);
  CHECK(config_of(plan_f32(100, 100, 100)).whole_k >= 100);
  CHECK_FALSE(is_tf32(plan_f32(100, 100, 100, false)));
  CHECK(static_cast<double>(47) * 53 * 804 < kGemmTf32MinFma);
  CHECK_FALSE(is_tf32(plan_f32(47, 53, 804)));
}

TEST_CASE("gemm model: full waves of the fastest tile for a large square product") {
  const GemmPlan p = plan_f32(4096, 4096, 4096);
  REQUIRE(p.kind == GemmPlanKind::tiled);
  CHECK(p.splits == 1);  // 1024 output tiles fill 132 SMs without splitting k
  // With equal occupancy, no other configuration is modelled faster than the one chosen.
  const auto& configs = f32_configs();
  const GemmProblem prob{GemmElement::f32, 4096, 4096, 4096, true, false, true};
  const double chosen = gemm_best_splits(prob, config_of(p), h200_occupancy(configs, p.config), kH200).second;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    CAPTURE(configs[static_cast<std::size_t>(i)].name);
    CHECK(gemm_best_splits(prob, configs[static_cast<std::size_t>(i)], h200_occupancy(configs, i), kH200).second >=
          chosen);
  }
}

TEST_CASE("gemm model: few output tiles and a long k split k, within the workspace bound") {
  const GemmPlan p = plan_f32(64, 64, 1 << 20);
  REQUIRE(p.kind == GemmPlanKind::tiled);
  CHECK(p.splits > 1);
  // One output tile: past kGemmMaxSplits, up to a slice for every CTA the device holds at once.
  CHECK(p.splits > kGemmMaxSplits);
  CHECK(p.splits <= kH200.sm_count * h200_occupancy(f32_configs(), p.config));
  CHECK(p.splits == gemm_effective_splits(1 << 20, config_of(p).bk, p.splits));
  // Output tiles enough to fill the SMs at kGemmMaxSplits slices keep that bound, and so do
  // slices that would be shorter than 512 k.
  CHECK(plan_f32(1024, 1024, 1 << 20).splits <= kGemmMaxSplits);
  CHECK(plan_f32(64, 64, 16384).splits <= kGemmMaxSplits);
  CHECK(plan_f32(2, 2, 2048).splits <= kGemmMaxSplits);
  CHECK(plan_f32(64, 64, 1 << 16).splits <= (1 << 16) / kGemmMinSliceKPastMax);
  // Many output tiles: splitting buys nothing.
  CHECK(plan_f32(8192, 8192, 256).splits == 1);
  // The partial sums of a split never take more than 1 GiB.
  const GemmPlan big = plan_f32(16384, 16384, 1 << 22, true, GemmDevice{4, 90});
  CHECK(static_cast<double>(big.splits) * 16384 * 16384 * 4 <= double(1 << 30));
  // A slice is never shorter than the minimum split depth: one k tile where the product is
  // latency-bound, gemm_min_split_k's depth elsewhere.
  const GemmPlan shallow = plan_f32(32, 32, 300);
  CHECK(shallow.splits <= std::max(1, 300 / gemm_min_split_k(config_of(shallow).bk, true)));
  const GemmPlan deeper = plan_f32(256, 256, 2048);
  CHECK(deeper.splits <= std::max(1, 2048 / gemm_min_split_k(config_of(deeper).bk)));
}

TEST_CASE("gemm model: effective splits give every slice the same whole number of k tiles") {
  for (int k : {1, 7, 32, 33, 1000, 4096, 100003})
    for (int bk : {8, 16, 32})
      for (int s = 1; s <= 70; ++s) {
        CAPTURE(k, bk, s);
        const int e = gemm_effective_splits(k, bk, s);
        const int k_tiles = (k + bk - 1) / bk;
        const int per = (k_tiles + s - 1) / s;
        CHECK(e >= 1);
        CHECK(e <= s);
        CHECK(e == (k_tiles + per - 1) / per);       // slices of `per` tiles cover k ...
        CHECK((e - 1) * per < k_tiles);               // ... and none is empty
        CHECK(gemm_effective_splits(k, bk, e) == e);  // a fixed point
      }
}

TEST_CASE("gemm model: the modelled time grows with the work and shrinks with the SMs") {
  const GemmArchModel& model = gemm_arch_model(90);
  const GemmConfigInfo& c = f32_configs()[0];
  const double eff = gemm_efficiency(GemmElement::f32, c.name, 90);
  double last = 0;
  for (long long k : {64, 256, 1024, 4096, 16384}) {
    const double t = gemm_model_seconds(model, GemmElement::f32, c, eff, 2048, 2048, k, 1, 132, 1);
    CHECK(t > last);
    last = t;
  }
  const double few = gemm_model_seconds(model, GemmElement::f32, c, eff, 4096, 4096, 4096, 1, 16, 1);
  const double many = gemm_model_seconds(model, GemmElement::f32, c, eff, 4096, 4096, 4096, 1, 132, 1);
  CHECK(many < few);
  // A split pays for its partial sums' traffic.
  const double one = gemm_model_seconds(model, GemmElement::f32, c, eff, 128, 128, 4096, 1, 132, 1);
  const double two = gemm_model_seconds(model, GemmElement::f32, c, eff, 128, 128, 4096, 2, 132, 1);
  CHECK(two < one);  // one tile: two slices run on two SMs at once
}

TEST_CASE("gemm model: variants that are not automatic are never picked, but can be forced") {
  const auto& configs = f32_configs();
  // The variants get 4 times the occupancy here, so the model alone would pick them.
  const auto occ = [&](int i) {
    return h200_occupancy(configs, i) * (configs[static_cast<std::size_t>(i)].automatic ? 1 : 4);
  };
  int forced = -1;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i)
    if (!configs[static_cast<std::size_t>(i)].automatic) forced = i;
  for (int m : {7, 64, 128, 1000, 4096, 8192})
    for (int n : {9, 128, 4096})
      for (int k : {64, 1000, 8192}) {
        CAPTURE(m, n, k);
        const GemmPlan p = plan_gemm({GemmElement::f32, m, n, k, true, false}, configs, occ, kH200);
        CHECK(config_of(p).automatic);
      }
  if (forced >= 0) {
    const GemmPlan p = plan_gemm({GemmElement::f32, 4096, 4096, 4096, true, false}, configs, occ, kH200, forced);
    CHECK(p.kind == GemmPlanKind::tiled);
    CHECK(p.config == forced);
  }
}

TEST_CASE("gemm model: double squares from 1000 to 8192 take the pipelined DMMA tiles") {
  // They ran at 0.86 to 0.96 of cuBLAS DGEMM on the H200 where the unpipelined tiles ran at 0.62
  // to 0.75 (run C of issue 13); the model must prefer them once calibrated.
  const std::vector<GemmConfigInfo> configs = gemm_configs<double>();
  for (int s : {1000, 1024, 2048, 3000, 4096, 8192}) {
    CAPTURE(s);
    const GemmProblem p{GemmElement::f64, s, s, s, true, false, false};
    const GemmPlan plan = plan_gemm(p, configs, [&](int i) { return h200_occupancy(configs, i); }, kH200);
    REQUIRE(plan.kind == GemmPlanKind::tiled);
    CHECK(configs[static_cast<std::size_t>(plan.config)].name.rfind("pipe-", 0) == 0);
  }
}

namespace {
int config_index(const std::vector<GemmConfigInfo>& configs, const std::string& name) {
  for (int i = 0; i < static_cast<int>(configs.size()); ++i)
    if (configs[static_cast<std::size_t>(i)].name == name) return i;
  return -1;
}
}  // namespace

TEST_CASE("gemm model: the wgmma tile on sm_90 only, where it has code and is modelled fastest") {
  const auto& configs = f32_configs();
  const int wg = config_index(configs, "wgmma-128x128x32");
  REQUIRE(wg >= 0);
  const GemmConfigInfo& c = configs[static_cast<std::size_t>(wg)];
  CHECK(c.automatic);
  CHECK(c.aligned_rows);  // TMA: rows of 16-byte multiples
  CHECK(c.only_arch == 90);
  // Large products on the H200: wgmma, one slice where the output tiles fill the SMs.
  for (int s : {2048, 4096, 8192}) {
    CAPTURE(s);
    const GemmPlan p = plan_f32(s, s, s);
    CHECK(p.config == wg);
    CHECK(p.splits == 1);
  }
  CHECK(plan_f32(5003, 3007, 4001).config == wg);
  // sm_90a code runs on compute capability 9.0 alone: never on sm_80 or sm_100, whatever the
  // occupancy callback says (the library's own says 0 there too).
  for (const GemmDevice dev : {GemmDevice{108, 80}, GemmDevice{148, 100}, GemmDevice{84, 89}}) {
    CAPTURE(dev.arch);
    const GemmPlan p = plan_f32(4096, 4096, 4096, true, dev);
    CHECK(p.config != wg);
    CHECK(config_of(p).math == GemmMath::tf32x3);
  }
  // An sm_90 device on which the library has no sm_90a code (occupancy 0): the mma.sync tiles.
  const auto no_wgmma = [&](int i) { return i == wg ? 0 : h200_occupancy(configs, i); };
  const GemmPlan fallback = plan_gemm({GemmElement::f32, 4096, 4096, 4096, true, false}, configs, no_wgmma, kH200);
  CHECK(fallback.config != wg);
  CHECK(config_of(fallback).math == GemmMath::tf32x3);
  // FloatMath::simt: never.
  CHECK(plan_f32(4096, 4096, 4096, false).config != wg);
}

TEST_CASE("gemm model: padded copies count against the configurations that need aligned rows") {
  const auto& configs = f32_configs();
  const GemmArchModel& model = gemm_arch_model(90);
  const int wg = config_index(configs, "wgmma-128x128x32");
  REQUIRE(wg >= 0);
  const GemmConfigInfo& c = configs[static_cast<std::size_t>(wg)];
  GemmProblem p{GemmElement::f32, 700, 500, 300, true, false, true};
  CHECK(gemm_pad_seconds(model, p, c) == 0.0);  // aligned
  p.a_rows_aligned = false;
  const double a_only = gemm_pad_seconds(model, p, c);
  CHECK(a_only > model.launch_seconds);
  p.b_rows_aligned = false;
  CHECK(gemm_pad_seconds(model, p, c) > a_only);
  CHECK(gemm_pad_seconds(model, p, configs[0]) == 0.0);  // a kernel that reads rows as they are
  // From kPadMinFma on every configuration gets the copies: no difference to model.
  GemmProblem big{GemmElement::f32, 1024, 1024, 1024, true, false, true, false, false};
  CHECK(static_cast<double>(big.m) * big.n * big.k >= kPadMinFma);
  CHECK(gemm_pad_seconds(model, big, c) == 0.0);
  // Over cubes from small to large: unaligned operands never make wgmma more likely, and at
  // some size the copies tip the choice away from it.
  const auto occ = [&](int i) { return h200_occupancy(configs, i); };
  bool tipped = false;
  for (int s = 100; s <= 1100; s += 25) {
    CAPTURE(s);
    const GemmPlan aligned = plan_gemm({GemmElement::f32, s, s, s, true, false, true}, configs, occ, kH200);
    const GemmPlan odd = plan_gemm({GemmElement::f32, s, s, s, true, false, true, false, false}, configs, occ, kH200);
    // wgmma-128x128x32 and its cluster split-K form both need aligned rows.
    const bool odd_wg = configs[static_cast<std::size_t>(odd.config)].aligned_rows;
    const bool aligned_wg = configs[static_cast<std::size_t>(aligned.config)].aligned_rows;
    if (odd_wg) CHECK(aligned_wg);
    if (aligned_wg && !odd_wg) tipped = true;
  }
  CHECK(tipped);
}

TEST_CASE("gemm model: k slices cover k, leave no slice empty, and match the effective split") {
  for (int bk : {8, 16, 32})
    for (long long k : {1LL, 7LL, 16LL, 17LL, 31LL, 32LL, 33LL, 100LL, 803LL, 1000LL, 1024LL, 4097LL, 8192LL})
      for (int splits = 0; splits <= 70; ++splits) {
        CAPTURE(bk, k, splits);
        const long long k_tiles = (k + bk - 1) / bk;
        const GemmSlices s = gemm_slices(k, bk, splits);
        REQUIRE(s.per_split >= 1);
        REQUIRE(s.splits >= 1);
        CHECK(s.splits <= std::max(1, splits));
        // Every k tile is in a slice, and the last slice holds at least one.
        CHECK(static_cast<long long>(s.splits) * s.per_split >= k_tiles);
        CHECK(static_cast<long long>(s.splits - 1) * s.per_split < k_tiles);
        CHECK(s.splits == gemm_effective_splits(static_cast<int>(k), bk, splits));
        CHECK(s.per_split == (k_tiles + s.splits - 1) / s.splits);
      }
}

TEST_CASE("gemm model: cluster split-K tiles sum up to 8 slices without the finalize, automatic per the switch") {
  // (The wgmma "-cl" tiles run on compute capability 9.0 only, as their base.)
  const auto& configs = f32_configs();
  std::vector<int> cluster;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    const GemmConfigInfo& c = configs[static_cast<std::size_t>(i)];
    if (c.cluster_splits == 0) continue;
    CAPTURE(c.name);
    cluster.push_back(i);
    CHECK(c.cluster_splits == 8);
    CHECK(c.automatic == (kGemmClusterSplitKWgmma && c.name == "wgmma-128x128x32-cl"));
    // Its base tile (the name without "-cl") exists, with the same shape and efficiency.
    const std::string base = c.name.substr(0, c.name.size() - 3);
    CHECK(c.name.substr(c.name.size() - 3) == "-cl");
    const auto it = std::find_if(configs.begin(), configs.end(), [&](const GemmConfigInfo& x) { return x.name == base; });
    REQUIRE(it != configs.end());
    CHECK(it->cluster_splits == 0);
    CHECK((it->bm == c.bm && it->bn == c.bn && it->bk == c.bk && it->math == c.math));
    CHECK((it->aligned_rows == c.aligned_rows && it->only_arch == c.only_arch));
    CHECK(gemm_efficiency(GemmElement::f32, c.name, 90) == gemm_efficiency(GemmElement::f32, base, 90));
    // Same slices: the cluster's sums cost neither a second launch nor the partial sums'
    // traffic, but their adding up in the cluster (cluster_sum_seconds a round) and, for
    // clusters that do not fill a GPC's 16 SMs, the SMs left idle; one slice: equal.
    const GemmArchModel& model = gemm_arch_model(90);
    const double eff = gemm_efficiency(GemmElement::f32, c.name, 90);
    for (int s : {2, 4}) {  // clusters that fill whole GPCs (128 of the 132 SMs); 49 k tiles allow both
      CAPTURE(s);
      const double t_cl = gemm_model_seconds(model, GemmElement::f32, c, eff, 777, 777, 777, s, 128, 2);
      const double t_ws = gemm_model_seconds(model, GemmElement::f32, *it, eff, 777, 777, 777, s, 128, 2);
      const long long ctas = static_cast<long long>((777 + c.bm - 1) / c.bm) * ((777 + c.bn - 1) / c.bn) * s;
      const double rounds = static_cast<double>((ctas + 2 * 128 - 1) / (2 * 128));
      CHECK(t_cl + model.launch_seconds <= t_ws + rounds * model.cluster_sum_seconds);
      CHECK(t_cl > t_ws - model.launch_seconds - (s + 1) * 777.0 * 777 * 4 / model.bytes_per_second);
    }
    // A cluster of 5 leaves a GPC's 16th SM idle: more rounds than the workspace split.
    CHECK(gemm_model_seconds(model, GemmElement::f32, c, eff, 4096, 4096, 777, 5, 132, 1) >
          gemm_model_seconds(model, GemmElement::f32, c, eff, 4096, 4096, 777, 4, 132, 1));
    CHECK(gemm_model_seconds(model, GemmElement::f32, c, eff, 777, 777, 777, 1, 132, 2) ==
          gemm_model_seconds(model, GemmElement::f32, *it, eff, 777, 777, 777, 1, 132, 2));
    // The model never asks a cluster for more slices than it holds, and a forced count is
    // clamped to it.
    for (const GemmProblem& p : {GemmProblem{GemmElement::f32, 64, 64, 1 << 20, true, false},
                                 GemmProblem{GemmElement::f32, 47, 53, 804, true, false},
                                 GemmProblem{GemmElement::f32, 777, 777, 777, true, false}}) {
      CAPTURE(p.m, p.n, p.k);
      const int s = gemm_best_splits(p, c, 2, kH200).first;
      CHECK((s >= 1 && s <= 8));
      const GemmPlan forced = plan_gemm(p, configs, [](int) { return 2; }, kH200, i, 64);
      CHECK(forced.config == i);
      CHECK((forced.splits >= 1 && forced.splits <= 8));
    }
  }
  REQUIRE(cluster.size() == 2);  // wgmma-128x128x32, wgmma-64x128x32

  // Both made automatic: on sm_90 the latency-bound 47x53x804 keeps the plain 64x64x16 with its
  // workspace slices (run U2a: 0.4026 TFLOP/s; the wgmma cluster tiles 0.2568 and 0.2967), large
  // products keep their tile, and before sm_90 no cluster tile is ever picked.
  std::vector<GemmConfigInfo> with = configs;
  for (int i : cluster) with[static_cast<std::size_t>(i)].automatic = true;
  const auto occ = [&](int i) { return h200_occupancy(with, i); };
  const GemmPlan small = plan_gemm({GemmElement::f32, 47, 53, 804, true, false}, with, occ, kH200);
  CHECK(with[static_cast<std::size_t>(small.config)].name == "64x64x16");
  CHECK(small.splits > 1);
  const GemmPlan big = plan_gemm({GemmElement::f32, 4096, 4096, 4096, true, false}, with, occ, kH200);
  CHECK(big.config == plan_f32(4096, 4096, 4096).config);
  for (int m : {47, 128, 777, 4096})
    for (int k : {64, 804, 4096}) {
      CAPTURE(m, k);
      const GemmPlan p = plan_gemm({GemmElement::f32, m, 53, k, true, false}, with, occ, GemmDevice{108, 80});
      CHECK(with[static_cast<std::size_t>(p.config)].cluster_splits == 0);
    }
}

namespace {
/// CTAs per SM of each configuration on the H200, as cudaOccupancyMaxActiveBlocksPerMultiprocessor
/// gives them: registers (cuobjdump -res-usage of build/gpu's gemm.cu.o and gemm_wgmma.cu.o,
/// tree 5bb0eda), threads and kSmemBytes (228 KB an SM, 1 KB reserved a block). With these the
/// model reproduces every default that run U2a labelled (e.g. "64x64x16 s=11" at 47x53x804).
int h200_blocks(GemmElement e, const std::string& name) {
  struct Row { GemmElement e; const char* name; int blocks; };
  static const Row rows[] = {
      {GemmElement::f32, "128x128x8", 2}, {GemmElement::f32, "128x256x8", 1}, {GemmElement::f32, "64x64x16", 4},
      {GemmElement::f32, "64x256x16", 1}, {GemmElement::f32, "tf32x3-128x64x32", 1},
      {GemmElement::f32, "tf32x3-64x128x32", 1}, {GemmElement::f32, "tf32x3-64x256x32", 1},
      {GemmElement::f32, "tf32x3-64x64x32", 2}, {GemmElement::f32, "tf32x3r-128x64x32-2b", 2},
      {GemmElement::f32, "tf32x3f-128x128x32", 1}, {GemmElement::f32, "wgmma-128x128x32", 1},
      {GemmElement::f32, "wgmma-64x128x32", 1}, {GemmElement::f32, "wgmma-128x128x32-cl", 1},
      {GemmElement::f32, "wgmma-64x128x32-cl", 1},
      // Session 35 (cudaOccupancyMaxActiveBlocksPerMultiprocessor on an H100, the same limits):
      // 93-96 registers and 41 KB; 121-127 registers and 56 KB.
      {GemmElement::f32, "tf32x3-32x32x32", 5}, {GemmElement::f32, "tf32x3-32x64x32", 4},
      {GemmElement::f32, "tf32x3-64x32x32", 4},
      // Session 36 (ncu on an H100): four CTAs an SM, by registers (101 and 128 a thread), and
      // for 128x16x16 by its 46 KB of shared memory too.
      {GemmElement::f32, "128x16x16", 4}, {GemmElement::f32, "16x128x16", 4},
      {GemmElement::f64, "128x128x16", 1}, {GemmElement::f64, "128x64x16", 2}, {GemmElement::f64, "64x64x16", 3},
      {GemmElement::f64, "pipe-128x128x16-k4", 1}, {GemmElement::f64, "pipe-128x128x16-k4-w16", 1},
      {GemmElement::f64, "pipe-128x128x32-k4-w16", 1}, {GemmElement::f64, "pipe-128x128x32-k8", 1},
      {GemmElement::f64, "pipe-128x64x16-k4-w8", 2},
      {GemmElement::f64, "pipe-64x64x16-k8", 2}, {GemmElement::f64, "pipe-64x64x32-k16", 2},
  };
  for (const Row& r : rows)
    if (r.e == e && name == r.name) return r.blocks;
  return 1;  // forced-only variants: never candidates
}

/// gemm's plan for the bench's operands (A m x k and B k x n, dense, op none; or other layouts:
/// a_kcontig, b_kcontig as GemmProblem's) on the H200.
std::string h200_plan(GemmElement e, int m, int n, int k, bool a_kcontig = true, bool b_kcontig = false) {
  const std::vector<GemmConfigInfo> configs = e == GemmElement::f64 ? gemm_configs<double>() : gemm_configs<float>();
  const int v = e == GemmElement::f64 ? 2 : 4;  // elements in 16 bytes
  const GemmProblem p{e, m, n, k, a_kcontig, b_kcontig, true, (a_kcontig ? k : m) % v == 0, (b_kcontig ? k : n) % v == 0};
  const GemmPlan plan = plan_gemm(p, configs, [&](int i) { return h200_blocks(e, configs[static_cast<std::size_t>(i)].name); }, kH200);
  if (plan.kind != GemmPlanKind::tiled) return "not tiled";
  return configs[static_cast<std::size_t>(plan.config)].name + " s=" + std::to_string(plan.splits);
}
}  // namespace

TEST_CASE("gemm model: the tail split runs whole rounds, and a sparse last round in cluster slices") {
  const GemmArchModel& h200 = gemm_arch_model(90);
  // 8192^3 on 128x128x32 tiles: 4096 tiles = 31 rounds of 132 and 4 tiles, split 8 ways.
  GemmTail t = gemm_tail_plan(h200, 4096, 132, 1, 8192, 32, 8);
  CHECK(t.main_tiles == 4092);
  CHECK(t.splits == 8);
  // 4096^3: a last round of 100 tiles is mostly full; 1024^3: 64 tiles, no whole round.
  CHECK(gemm_tail_plan(h200, 1024, 132, 1, 4096, 32, 8).splits == 1);
  CHECK(gemm_tail_plan(h200, 64, 132, 1, 1024, 32, 8).splits == 1);
  // 40 tiles past a round: 3 slices (3-CTA clusters fill 120 SMs); a short k allows fewer.
  t = gemm_tail_plan(h200, 172, 132, 1, 4096, 32, 8);
  CHECK(t.main_tiles == 132);
  CHECK(t.splits == 3);
  CHECK(gemm_tail_plan(h200, 136, 132, 1, 200, 32, 8).splits == 1);
  // The DMMA "-cl" tiles: automatic per the switch, 2 slices at 1024^3 (64 tiles), and the
  // tail modelled faster than the base tile at 8192^3.
  const std::vector<GemmConfigInfo> configs = gemm_configs<double>();
  for (const char* name : {"pipe-128x128x16-k4-w16-cl", "pipe-128x128x32-k4-w16-cl"}) {
    CAPTURE(name);
    const int i = config_index(configs, name);
    REQUIRE(i >= 0);
    const GemmConfigInfo& c = configs[static_cast<std::size_t>(i)];
    CHECK(c.automatic == kGemmClusterSplitKDmma);
    CHECK(c.tail_split);
    const GemmProblem p{GemmElement::f64, 1024, 1024, 1024, true, false, false};
    CHECK(gemm_best_splits(p, c, 1, kH200).first == 2);
    const std::string base_name = std::string(name).substr(0, std::string(name).size() - 3);
    const GemmConfigInfo& base = configs[static_cast<std::size_t>(config_index(configs, base_name))];
    const double eff = gemm_efficiency(GemmElement::f64, name, 90);
    CHECK(gemm_model_seconds(h200, GemmElement::f64, c, eff, 8192, 8192, 8192, 1, 132, 1) <
          gemm_model_seconds(h200, GemmElement::f64, base, eff, 8192, 8192, 8192, 1, 132, 1));
  }
}

TEST_CASE("gemm model: on the H200, the configurations measured fastest (runs U1, U2a)") {
  // Shapes with every configuration measured (bench_gemm's ours-<config> rows): the fastest.
  // 128x128x4096 keeps tf32x3-64x64x32 (9.999 TFLOP/s; 64x64x16 10.04, inside the noise).
  // 47x53x804, latency-bound (gemm_min_split_k): slices of 2 k tiles. The session 10 run: 11
  // slices 0.81 of cuBLAS, 13 slices 0.89.
  CHECK(h200_plan(GemmElement::f32, 47, 53, 804) == "64x64x16 s=26");
  CHECK(h200_plan(GemmElement::f32, 128, 128, 4096) == "tf32x3-64x64x32 s=32");
  CHECK(h200_plan(GemmElement::f32, 65536, 64, 64) == "tf32x3r-128x64x32-2b s=1");  // 23.62, was 64x64x16's 20.55
  CHECK(h200_plan(GemmElement::f32, 1000, 1000, 1000) == "wgmma-128x128x32-cl s=2");  // 60.1, was 53.5
  // 777^3: the cluster tile at 2 slices, as at 1000^3 (its one measured row there had 5:
  // 5-CTA clusters, 18.95); the plain wgmma tile at 2 slices measured 21.83, 64x64x16 20.14.
  CHECK(h200_plan(GemmElement::f32, 777, 777, 777) == "wgmma-128x128x32-cl s=2");
  // Double (session 32, after whole k tiles began to copy without bounds; one H200, two
  // processes, of cuBLAS): 2048^3 and 4096^3 the k8 tile (1.021-1.023 and 1.037-1.046, every
  // other tile behind); 1000^3 and 1024^3 pipe-64x64x16-k8 alone (1024^3: 0.967-0.972, the
  // 16-deep cluster tile at 2 slices, the pick before, 0.908-0.910; 1000^3: 0.890-0.896 against
  // 0.893, the 32-deep cluster tile's 0.902-0.906 the best there); 8192^3 the k8 tile (H100
  // runs S15 and S16 had it ahead of the 16-deep cluster tile's tail split, 0.907 and 0.914
  // against 0.890 and 0.898; an H200 run of session 29 had it behind, 0.887 against 0.895).
  CHECK(h200_plan(GemmElement::f64, 1024, 1024, 1024) == "pipe-64x64x16-k8 s=1");
  CHECK(h200_plan(GemmElement::f64, 2048, 2048, 2048) == "pipe-128x128x32-k8 s=1");
  CHECK(h200_plan(GemmElement::f64, 4096, 4096, 4096) == "pipe-128x128x32-k8 s=1");
  CHECK(h200_plan(GemmElement::f64, 8192, 8192, 8192) == "pipe-128x128x32-k8 s=1");
  // Shapes measured with the default only (bench/RESULTS.md): the picks they were measured with.
  CHECK(h200_plan(GemmElement::f32, 512, 512, 512) == "tf32x3-64x64x32 s=4");
  // 256^3: 64x64x16 s=4 measured 3.65 TFLOP/s (runs T3 to U2a); tf32x3-64x64x32 s=2, which a
  // lower 64x64x16 rate picked, 2.89 (run V3). Since session 34 the CUDA-core 64x64 tile may cut
  // k into slices of two k tiles where its grid leaves SMs idle (gemm_best_splits; H100, of
  // cuBLAS: s=4 0.836, s=8 1.003); so the small products of that sweep.
  CHECK(h200_plan(GemmElement::f32, 256, 256, 256) == "64x64x16 s=8");
  CHECK(h200_plan(GemmElement::f32, 128, 256, 512) == "64x64x16 s=16");
  CHECK(h200_plan(GemmElement::f32, 512, 128, 256) == "64x64x16 s=8");
  CHECK(h200_plan(GemmElement::f32, 256, 64, 1024) == "64x64x16 s=32");
  CHECK(h200_plan(GemmElement::f32, 192, 64, 2048) == "64x64x16 s=43");
  // Only that tile: the others keep their slices of at least 64 k (384x64x1024 on 128x128x8 at
  // 64 slices of 16 k ran 0.642 of cuBLAS against 64x64x16 s=16's 0.897).
  CHECK(h200_plan(GemmElement::f32, 384, 64, 1024).rfind("64x64x16 ", 0) == 0);
  CHECK(h200_plan(GemmElement::f32, 2048, 2048, 2048) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 4096, 4096, 4096) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 8192, 8192, 8192) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 4097, 4097, 4097) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 47, 804, 53).rfind("tf32x3-32x32x32 ", 0) == 0);  // the next test case
  CHECK(h200_plan(GemmElement::f32, 8192, 8192, 64) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 64, 8192, 8192) == "tf32x3-64x256x32 s=4");
  CHECK(h200_plan(GemmElement::f32, 5003, 3007, 4001) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f64, 1000, 1000, 1000) == "pipe-64x64x16-k8 s=1");
  // 1024^3 float (measured 58.21 with wgmma s=2): the cluster tile, as at 1000^3 (same tiles).
  CHECK(h200_plan(GemmElement::f32, 1024, 1024, 1024) == "wgmma-128x128x32-cl s=2");
}

TEST_CASE("gemm model: the short-k tile takes k <= 128 in one slice, latency-bound products too") {
  const auto& configs = f32_configs();
  const int i = config_index(configs, "tf32x3-32x32x32");
  REQUIRE(i >= 0);
  const GemmConfigInfo& c = configs[static_cast<std::size_t>(i)];
  CHECK(c.automatic);
  CHECK(c.whole_k == c.stages * c.bk);
  CHECK(c.whole_k == 128);
  // Session 35 (H100, one process, forced rows of bench_gemm against cuBLAS): the tile at one
  // slice won each of these, the plan before in parentheses.
  CHECK(h200_plan(GemmElement::f32, 384, 256, 128) == "tf32x3-32x32x32 s=1");  // 1.16 (tf32x3-64x64x32 0.63)
  CHECK(h200_plan(GemmElement::f32, 128, 256, 128) == "tf32x3-32x32x32 s=1");  // 1.17 (0.64)
  CHECK(h200_plan(GemmElement::f32, 192, 512, 64) == "tf32x3-32x32x32 s=1");   // 1.16 (0.68)
  CHECK(h200_plan(GemmElement::f32, 384, 512, 128) == "tf32x3-32x32x32 s=1");  // 1.03 (0.64)
  CHECK(h200_plan(GemmElement::f32, 512, 512, 32) == "tf32x3-32x32x32 s=1");   // 1.03 (0.79)
  CHECK(h200_plan(GemmElement::f32, 768, 768, 96) == "tf32x3-32x32x32 s=1");   // 1.23 (1.07)
  CHECK(h200_plan(GemmElement::f32, 2048, 256, 128) == "tf32x3-32x32x32 s=1");  // 1.07 (0.93)
  CHECK(h200_plan(GemmElement::f32, 64, 2048, 128) == "tf32x3-32x32x32 s=1");  // 1.43 (0.71)
  // Latency-bound (below kGemmTf32MinFma), which otherwise stay on the CUDA cores.
  CHECK(h200_plan(GemmElement::f32, 128, 128, 128) == "tf32x3-32x32x32 s=1");  // 1.12 (64x64x16 s=8 0.75)
  CHECK(h200_plan(GemmElement::f32, 64, 512, 64) == "tf32x3-32x32x32 s=1");    // 1.15 (64x64x16 s=4 0.63)
  // The default plans measured in a second process (same session, of cuBLAS), before in
  // parentheses: 47x804x53 1.673 (64x64x16 s=1 0.952), 16x2048x96 1.180 (128x128x8 s=12 0.568),
  // 47x512x64 1.877 (64x64x16 s=4 1.068), 640x1024x64 (640 tiles, one round) 1.077 (0.927).
  CHECK(h200_plan(GemmElement::f32, 47, 804, 53) == "tf32x3-32x32x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 16, 2048, 96) == "tf32x3-32x32x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 47, 512, 64) == "tf32x3-32x32x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 640, 1024, 64) == "tf32x3-32x32x32 s=1");
  // Past one round of CTAs (5 an SM) it lost to the plans before, so they stay: 640x2048x32
  // (0.852 against 0.895), 2048x640x64 (0.847 against 1.035), 640x4096x64, 4096x640x32, and
  // 1024x1024x64 (0.808 against 0.969) ...
  CHECK(h200_plan(GemmElement::f32, 640, 2048, 32) == "tf32x3r-128x64x32-2b s=1");
  CHECK(h200_plan(GemmElement::f32, 2048, 640, 64) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 640, 4096, 64) == "wgmma-128x128x32 s=1");
  CHECK(h200_plan(GemmElement::f32, 4096, 640, 32) == "128x128x8 s=1");
  CHECK(h200_plan(GemmElement::f32, 1024, 1024, 64) == "tf32x3-64x64x32 s=1");
  // ... but where m or n fits one tile, which the larger tiles mostly pad (65536x16x128 0.826
  // against tf32x3r-128x64x32-2b's 0.619, 16x65536x128 0.860 against tf32x3-64x256x32's 0.710,
  // before the narrow tiles took those): 32 x 65536 x 128 where B is k-contiguous.
  CHECK(h200_plan(GemmElement::f32, 32, 65536, 128, true, true).rfind("tf32x3-32x32x32 ", 0) == 0);
  // Past its k: never picked (unmeasured there), and its own best split is one slice.
  for (int k : {129, 160, 256, 804})
    for (int m : {47, 128, 384}) {
      CAPTURE(k, m);
      CHECK(h200_plan(GemmElement::f32, m, 256, k).rfind("tf32x3-32x32x32", 0) != 0);
    }
  const GemmProblem p{GemmElement::f32, 384, 256, 128, true, false};
  CHECK(gemm_best_splits(p, c, 5, kH200).first == 1);
  // gemm_forced still runs it at any k and slice count.
  const GemmPlan forced = plan_gemm({GemmElement::f32, 64, 64, 1000, true, false}, configs,
                                    [&](int j) { return h200_blocks(GemmElement::f32, configs[static_cast<std::size_t>(j)].name); },
                                    kH200, i, 4);
  CHECK(forced.config == i);
  CHECK(forced.splits == 4);
}


TEST_CASE("gemm model: the narrow CUDA-core tiles take n <= 16 or m <= 16, and only there") {
  const auto& configs = f32_configs();
  for (const char* name : {"128x16x16", "16x128x16"}) {
    const int i = config_index(configs, name);
    REQUIRE(i >= 0);
    const GemmConfigInfo& c = configs[static_cast<std::size_t>(i)];
    CHECK(c.automatic);
    CHECK(c.narrow_side);
    CHECK(c.math == GemmMath::simt);
  }
  // The tall tile where n fits it, the short one where m does: every row of tiles reads the long
  // operand once. Session 36 (H100, of cuBLAS; the plan before, forced, in parentheses):
  // 65536x16x128 0.980 (0.824), 16x65536x128 1.138 (0.847), 100000x3x64 1.203 (0.886),
  // 8x100000x64 1.187 (0.902), 16x512x2048 at 64 slices 0.955 (0.810).
  CHECK(h200_plan(GemmElement::f32, 65536, 16, 128).rfind("128x16x16 ", 0) == 0);
  CHECK(h200_plan(GemmElement::f32, 16, 65536, 128).rfind("16x128x16 ", 0) == 0);
  CHECK(h200_plan(GemmElement::f32, 100000, 3, 64).rfind("128x16x16 ", 0) == 0);
  CHECK(h200_plan(GemmElement::f32, 8, 100000, 64).rfind("16x128x16 ", 0) == 0);
  // A side past a tile's width: never that tile, wherever else the model would price it.
  const auto on = [](const std::string& plan, const char* name) { return plan.rfind(std::string(name) + " ", 0) == 0; };
  for (int narrow : {17, 24, 32, 33, 64})
    for (int len : {1000, 65536}) {
      CAPTURE(narrow, len);
      for (const std::string& plan : {h200_plan(GemmElement::f32, len, narrow, 128), h200_plan(GemmElement::f32, narrow, len, 128)}) {
        CHECK_FALSE(on(plan, "128x16x16"));
        CHECK_FALSE(on(plan, "16x128x16"));
      }
    }
  // The short-wide one not where B is k-contiguous (op(B) = B^T: its tile would come in the
  // transposing copy); the tall one in every layout (A k-contiguous: its [m][k] tile).
  for (bool ak : {true, false}) {
    CHECK(on(h200_plan(GemmElement::f32, 16, 65536, 128, ak, false), "16x128x16"));
    CHECK_FALSE(on(h200_plan(GemmElement::f32, 16, 65536, 128, ak, true), "16x128x16"));
    for (bool bk : {true, false}) CHECK(on(h200_plan(GemmElement::f32, 65536, 16, 128, ak, bk), "128x16x16"));
  }
  // Long k over few tiles: k slices, as the other CUDA-core tiles.
  const std::string p = h200_plan(GemmElement::f32, 16, 512, 2048);
  CHECK(p.rfind("16x128x16 s=", 0) == 0);
  CHECK(p != "16x128x16 s=1");
}
