// The multi-GPU component (devmat::dist) beside devmat on one GPU, in the same run, and NCCL's
// own all-reduce. Rows (bench/support.hpp naming; ratio = ours / reference):
//   gemm-dist-replicated/f32/NxNxN: C = A * B, A row-sharded over every GPU, B replicated (no
//       communication), against the same product on one GPU ("one-gpu"); N = 16384, 8192.
//   gemm-dist-sharded/f32/NxNxN: the same with B row-sharded (its blocks passed round a ring,
//       overlapped with the products: included in the time).
//   sum-dist/f32/32768x16384: sum() of a 2^15 x 2^14 sharded matrix (2 x 2^28 elements) against
//       sum() of the same total on one GPU (GB/s of input); both timed the same way, as the wall
//       time of the call (it returns the value, so it has waited for its GPUs).
//   col-sums-dist/f32/32768x16384: col_sums() (local column sums, then an all-reduce of a row).
//   allreduce-busbw/f32/268435456: devmat's all-reduce-based col_sums of a 2^28-column matrix with one
//       row per GPU (a 1 GiB all-reduce that reads each rank's row in place) in NCCL's bus
//       bandwidth (algbw * 2(n-1)/n), against ncclAllReduce of the same 1 GiB ("nccl").
// Multi-GPU times are host wall times from the first launch until every GPU is done
// (Communicator::synchronize), so they cover every device. With one GPU only the one-GPU rows
// run. NVLink multicast is off (the library sets NCCL_NVLS_ENABLE=0; so does scripts/gpu-check).
#include "support.hpp"

#include <devmat/devmat.hpp>
#include <devmat/dist.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

namespace {
using devmat::Communicator;
using devmat::DeviceMatrix;
using devmat::Index;
using devmat::ReplicatedMatrix;
using devmat::ShardedMatrix;
namespace b = devmat::bench;

// Destroyed at exit before the CUDA runtime (constructed after it), so its NCCL resources are
// freed (the memcheck leak check sees no leak).
Communicator& comm() {
  static Communicator c = Communicator::local();
  return c;
}

template <class T>
ShardedMatrix<T> random_sharded(Index rows, Index cols, std::uint64_t seed) {
  ShardedMatrix<T> m(rows, cols, comm());
  for (int r : comm().local_ranks()) {
    const devmat::detail::DeviceScope scope(comm().device(r));
    m.shard(r) = DeviceMatrix<T>::random_uniform(m.block_rows(r), cols, T(-1), T(1), seed + r, comm().stream(r));
  }
  return m;
}

/// Wall time of `op` followed (with `wait_all`) by waiting for every GPU, one warm-up first.
/// Without it, `op` is a call that returns a host value (a reduction) and so has waited for
/// its own work: the time until the caller holds the result.
template <class Op>
void time_wall(benchmark::State& state, double work, b::Unit unit, bool wait_all, Op&& op) {
  op();
  comm().synchronize();
  double total = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    if (wait_all) comm().synchronize();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total += s;
  }
  const double scale = unit == b::kTflops ? 1e12 : 1e9;
  state.counters["value"] = work * static_cast<double>(state.iterations()) / total / scale;
  state.counters["unit"] = unit;
}

/// Wall time of `op` followed by waiting for every GPU, one warm-up first.
template <class Op>
void time_all(benchmark::State& state, double work, b::Unit unit, Op&& op) {
  time_wall(state, work, unit, true, std::forward<Op>(op));
}

std::string cube(Index n) { return std::to_string(n) + "x" + std::to_string(n) + "x" + std::to_string(n); }

void register_gemm(Index n, bool multi) {
  const double flops = 2.0 * n * n * n;
  for (const char* op : {"gemm-dist-replicated", "gemm-dist-sharded"}) {
    const bool sharded = std::string(op) == "gemm-dist-sharded";
    benchmark::RegisterBenchmark(b::name(op, "f32", cube(n), "one-gpu").c_str(), [=](benchmark::State& st) {
      DEVMAT_BENCH_CUDA(cudaSetDevice(0));
      const auto A = DeviceMatrix<float>::random_uniform(n, n, -1.f, 1.f, 1);
      const auto B = DeviceMatrix<float>::random_uniform(n, n, -1.f, 1.f, 2);
      DeviceMatrix<float> C(n, n);
      b::time_on_stream(st, C.stream().native(), flops, b::kTflops, [&] { devmat::gemm(1.f, A, B, 0.f, C); });
    })->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
    if (!multi) continue;
    benchmark::RegisterBenchmark(b::name(op, "f32", cube(n), "ours").c_str(), [=](benchmark::State& st) {
      const auto A = random_sharded<float>(n, n, 1);
      const auto Bs = random_sharded<float>(n, n, 2);
      ShardedMatrix<float> C(n, n, comm());
      if (sharded) {
        time_all(st, flops, b::kTflops, [&] { devmat::gemm(1.f, A, Bs, 0.f, C); });
      } else {
        ReplicatedMatrix<float> Br = ReplicatedMatrix<float>::broadcast(Bs.gather(0), comm(), 0);
        time_all(st, flops, b::kTflops, [&] { devmat::gemm(1.f, A, Br, 0.f, C); });
      }
    })->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
  }
}

enum class Collective { all_reduce, all_gather, all_to_all };

/// One NCCL collective over all GPUs (its own communicators and buffers of `count` floats a
/// GPU), in bus bandwidth as nccl-tests counts it: all-reduce 2(n-1)/n of the buffer,
/// all-gather (n-1)/n of the gathered total (`count` floats a GPU), all-to-all (grouped
/// ncclSend/ncclRecv of count/n floats to every peer) (n-1)/n of the buffer.
void register_nccl_busbw(const std::string& op, const std::string& shape, Index count, Collective kind) {
  const int P = comm().size();
  const bool all_gather = kind == Collective::all_gather;
  const double bus = kind == Collective::all_reduce ? double(count) * sizeof(float) * 2.0 * (P - 1) / P
                     : all_gather                   ? double(count) * P * sizeof(float) * (P - 1) / P
                                                    : double(count) * sizeof(float) * (P - 1) / P;
  benchmark::RegisterBenchmark(b::name(op, "f32", shape, "nccl").c_str(), [=](benchmark::State& st) {
    std::vector<int> devs(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) devs[static_cast<std::size_t>(r)] = r;
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(P));
    if (ncclCommInitAll(comms.data(), P, devs.data()) != ncclSuccess) {
      st.SkipWithError("ncclCommInitAll failed");
      return;
    }
    const Index out_count = all_gather ? count * P : count;
    std::vector<float*> in(static_cast<std::size_t>(P)), out(static_cast<std::size_t>(P));
    std::vector<cudaStream_t> streams(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
      DEVMAT_BENCH_CUDA(cudaSetDevice(r));
      DEVMAT_BENCH_CUDA(cudaMalloc(&in[r], count * sizeof(float)));
      DEVMAT_BENCH_CUDA(cudaMalloc(&out[r], out_count * sizeof(float)));
      DEVMAT_BENCH_CUDA(cudaMemset(in[r], 0, count * sizeof(float)));
      DEVMAT_BENCH_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    }
    const auto run = [&] {
      ncclGroupStart();
      for (int r = 0; r < P; ++r) {
        if (kind == Collective::all_gather) {
          ncclAllGather(in[r], out[r], count, ncclFloat32, comms[r], streams[r]);
        } else if (kind == Collective::all_reduce) {
          ncclAllReduce(in[r], out[r], count, ncclFloat32, ncclSum, comms[r], streams[r]);
        } else {
          const Index part = count / P;
          for (int q = 0; q < P; ++q) {
            ncclSend(in[r] + q * part, part, ncclFloat32, q, comms[r], streams[r]);
            ncclRecv(out[r] + q * part, part, ncclFloat32, q, comms[r], streams[r]);
          }
        }
      }
      ncclGroupEnd();
      for (int r = 0; r < P; ++r) {
        DEVMAT_BENCH_CUDA(cudaSetDevice(r));
        DEVMAT_BENCH_CUDA(cudaStreamSynchronize(streams[r]));
      }
    };
    run();
    double total = 0;
    for (auto _ : st) {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      st.SetIterationTime(t);
      total += t;
    }
    st.counters["value"] = bus * static_cast<double>(st.iterations()) / total / 1e9;
    st.counters["unit"] = b::kGBps;
    st.counters["gpus"] = P;
    for (int r = 0; r < P; ++r) {
      DEVMAT_BENCH_CUDA(cudaSetDevice(r));
      cudaFree(in[r]);
      cudaFree(out[r]);
      cudaStreamDestroy(streams[r]);
      ncclCommDestroy(comms[r]);
    }
    DEVMAT_BENCH_CUDA(cudaSetDevice(0));
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

void register_reductions(bool multi) {
  const Index rows = Index(1) << 15, cols = Index(1) << 14;  // 2 x 2^28 elements
  const double bytes = double(rows) * cols * sizeof(float);
  benchmark::RegisterBenchmark(b::name("sum-dist", "f32", "32768x16384", "one-gpu").c_str(), [=](benchmark::State& st) {
    DEVMAT_BENCH_CUDA(cudaSetDevice(0));
    const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
    time_wall(st, bytes, b::kGBps, false, [&] { benchmark::DoNotOptimize(A.sum()); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("col-sums-dist", "f32", "32768x16384", "one-gpu").c_str(), [=](benchmark::State& st) {
    DEVMAT_BENCH_CUDA(cudaSetDevice(0));
    const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
    b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { auto c = A.col_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  if (!multi) return;
  benchmark::RegisterBenchmark(b::name("sum-dist", "f32", "32768x16384", "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_sharded<float>(rows, cols, 3);
    time_wall(st, bytes, b::kGBps, false, [&] { benchmark::DoNotOptimize(A.sum()); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("col-sums-dist", "f32", "32768x16384", "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_sharded<float>(rows, cols, 3);
    time_all(st, bytes, b::kGBps, [&] { auto c = A.col_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);

  // All-reduce bus bandwidth at 2^28 floats (1 GiB): devmat's col_sums of P x 2^28 (one row per
  // GPU: a local column sum, then the all-reduce) beside NCCL's own all-reduce.
  const int P = comm().size();
  const Index n = Index(1) << 28;
  const double bus = double(n) * sizeof(float) * 2.0 * (P - 1) / P;
  benchmark::RegisterBenchmark(b::name("allreduce-busbw", "f32", "268435456", "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_sharded<float>(P, n, 4);
    time_all(st, bus, b::kGBps, [&] { auto c = A.col_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_nccl_busbw("allreduce-busbw", "268435456", n, Collective::all_reduce);
}

/// The scaling rows (issue 16's shapes, run on any GPU count; scripts/scaling_table.py turns the
/// runs on 2, 4 and 8 GPUs into the speed-up table and plot): `scale-*` ops, each with its
/// one-GPU row on the same total and a `gpus` counter.
///   scale-gemm-sharded/f32/32768x32768x32768: C = A * B, A and B row-sharded (B's blocks
///       passed round a ring, overlapped), against one GPU; NCCL all-gather of B beside it.
///   scale-sum/f32/8x268435456 and scale-col-sums/f32/8x268435456: a 2^16 x 2^15 matrix (8 x 2^28
///       elements), against one GPU; col_sums' all-reduce beside NCCL's all-reduce of a row.
///   scale-transpose/f32/65536x65536: the all-to-all transpose, against one GPU's transpose; NCCL's
///       all-to-all of the same shards beside it (the exchange that bounds it: NVLink, not HBM).
void register_scaling(bool multi) {
  const int P = multi ? comm().size() : 1;
  const auto gpus = [=](benchmark::State& st, int n) { st.counters["gpus"] = n; };
  {
    const Index n = 32768;
    const double flops = 2.0 * n * n * n;
    const std::string shape = cube(n);
    benchmark::RegisterBenchmark(b::name("scale-gemm-sharded", "f32", shape, "one-gpu").c_str(), [=](benchmark::State& st) {
      DEVMAT_BENCH_CUDA(cudaSetDevice(0));
      const auto A = DeviceMatrix<float>::random_uniform(n, n, -1.f, 1.f, 1);
      const auto B = DeviceMatrix<float>::random_uniform(n, n, -1.f, 1.f, 2);
      DeviceMatrix<float> C(n, n);
      b::time_on_stream(st, C.stream().native(), flops, b::kTflops, [&] { devmat::gemm(1.f, A, B, 0.f, C); });
      gpus(st, 1);
    })->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
    if (multi) {
      benchmark::RegisterBenchmark(b::name("scale-gemm-sharded", "f32", shape, "ours").c_str(), [=](benchmark::State& st) {
        const auto A = random_sharded<float>(n, n, 1);
        const auto Bs = random_sharded<float>(n, n, 2);
        ShardedMatrix<float> C(n, n, comm());
        time_all(st, flops, b::kTflops, [&] { devmat::gemm(1.f, A, Bs, 0.f, C); });
        gpus(st, P);
      })->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
      register_nccl_busbw("scale-allgather-busbw", std::to_string(n / P) + "x" + std::to_string(n) + "-per-gpu",
                          n / P * n, Collective::all_gather);
    }
  }
  {
    const Index rows = Index(1) << 16, cols = Index(1) << 15;  // 8 x 2^28 elements
    const double bytes = double(rows) * cols * sizeof(float);
    for (const char* op : {"scale-sum", "scale-col-sums"}) {
      const bool sum = std::string(op) == "scale-sum";
      benchmark::RegisterBenchmark(b::name(op, "f32", "8x268435456", "one-gpu").c_str(), [=](benchmark::State& st) {
        DEVMAT_BENCH_CUDA(cudaSetDevice(0));
        const auto A = DeviceMatrix<float>::random_uniform(rows, cols, -1.f, 1.f, 3);
        if (sum) time_wall(st, bytes, b::kGBps, false, [&] { benchmark::DoNotOptimize(A.sum()); });
        else b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { auto c = A.col_sums(); });
        gpus(st, 1);
      })->UseManualTime()->Unit(benchmark::kMillisecond);
      if (!multi) continue;
      benchmark::RegisterBenchmark(b::name(op, "f32", "8x268435456", "ours").c_str(), [=](benchmark::State& st) {
        const auto A = random_sharded<float>(rows, cols, 3);
        if (sum) time_wall(st, bytes, b::kGBps, false, [&] { benchmark::DoNotOptimize(A.sum()); });
        else time_all(st, bytes, b::kGBps, [&] { auto c = A.col_sums(); });
        gpus(st, P);
      })->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
  {
    const Index n = 65536;
    const double bytes = 2.0 * double(n) * n * sizeof(float);  // read and written
    benchmark::RegisterBenchmark(b::name("scale-transpose", "f32", "65536x65536", "one-gpu").c_str(), [=](benchmark::State& st) {
      DEVMAT_BENCH_CUDA(cudaSetDevice(0));
      const auto A = DeviceMatrix<float>::random_uniform(n, n, -1.f, 1.f, 5);
      b::time_on_stream(st, A.stream().native(), bytes, b::kGBps, [&] { auto t = A.transpose(); });
      gpus(st, 1);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
    if (multi) {
      benchmark::RegisterBenchmark(b::name("scale-transpose", "f32", "65536x65536", "ours").c_str(), [=](benchmark::State& st) {
        const auto A = random_sharded<float>(n, n, 5);
        time_all(st, bytes, b::kGBps, [&] { auto t = A.transpose(); });
        gpus(st, P);
      })->UseManualTime()->Unit(benchmark::kMillisecond);
      // The exchange alone, as NCCL moves it: each GPU's shard (n/P rows) to every peer.
      register_nccl_busbw("scale-alltoall-busbw", std::to_string(n / P) + "x" + std::to_string(n) + "-per-gpu",
                          n / P * n, Collective::all_to_all);
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays off (also for NCCL's own rows)
  int gpus = 0;
  DEVMAT_BENCH_CUDA(cudaGetDeviceCount(&gpus));
  const bool multi = gpus >= 2;
  if (!multi) std::printf("bench_dist: %d GPU: only the one-GPU rows run (the multi-GPU ones need 2)\n", gpus);
  register_gemm(16384, multi);
  register_gemm(8192, multi);
  register_reductions(multi);
  register_scaling(multi);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
