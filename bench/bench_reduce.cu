// Reductions: sum() beside cub::DeviceReduce::Sum; row_sums() and col_sums() beside a
// cub::DeviceReduce::Sum over the same bytes (a memory-speed bound, impl "cub-reduce-bound":
// a partial reduction reads what a full one reads and writes little more), row_sums() also
// beside cub::DeviceSegmentedReduce::Sum (impl "cub-segmented", listed under the table). Other
// configurations of dispatch/reduce.cuh run as impl "ours-<config>" so one run picks the
// fastest. GB/s count bytes read; sums are timed in their async forms (no host sync).
//
// The bound is a read-only sum: row_sums of a rows x cols f32 matrix also writes rows * 4 bytes,
// so at equal bandwidth its ratio is at most about cols / (cols + 1) (0.75 for 3 columns, 0.94
// for 16), and col_sums of a short-wide one rows / (rows + 1) (0.75 for 3 rows).
//
// A second bound, "cub-reduce-write-bound" (listed under the table): the same CUB sum plus a write
// of the output bytes (cudaMemsetAsync), the bytes a partial reduction moves. A third,
// "cub-reduce-moved" (listed under the table, f32 rows): one CUB sum over as many elements as the
// partial reduction reads and writes together (one pass, no second launch), timed against the
// bytes ours reads, so ours/cub-reduce-moved = CUB's time for our moved bytes / our time.
//
// The narrow kernels under trial (dispatch/reduce.cuh's NarrowTrials: row sums staged through
// shared memory or as one flat stream, column sums of one flat stream, column sums of unaligned
// rows realigned in the sums, by element tiles, by the short-wide kernel or, u8, as aligned
// chunks cut by shuffles) run as "ours-<name>"
// on the narrow, short-wide and odd rows, and on the issue's typed rows (u8, i32, f64, registered
// first) as <op>/<dtype>/<shape>/ours-<name>; test_reduce_narrow checks each of them through the
// same launcher. DEVMAT_BENCH_REDUCE_SHAPES adds shapes of the caller's (see main).
#include "random.cuh"
#include "support.hpp"

#include "dispatch/reduce.cuh"

#include <devmat/devmat.hpp>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {
using devmat::DeviceMatrix;
using devmat::Index;
using devmat::Stream;
using devmat::sum_t;
namespace b = devmat::bench;
using b::dtype;
using b::random_matrix;
namespace d = devmat::detail;

/// A plain column-sum reference in double: block (x, y) sums columns [256 x, 256 x + 256)
/// over row chunk y, then adds into out (which starts at zero).
template <class T>
__global__ void naive_col_sums_kernel(const T* in, Index rows, Index cols, double* out) {
  const Index c = blockIdx.x * Index(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  const Index chunk = (rows + gridDim.y - 1) / gridDim.y;
  const Index r0 = blockIdx.y * chunk, r1 = r0 + chunk < rows ? r0 + chunk : rows;
  double s = 0;
  for (Index r = r0; r < r1; ++r) s += static_cast<double>(in[r * cols + c]);
  atomicAdd(out + c, s);
}

/// Agreement: exact for integers, relative 1e-4 otherwise (enough to catch a wrong result).
template <class A, class B>
bool agrees(const std::vector<A>& got, const std::vector<B>& want) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {
      if (static_cast<long double>(got[i]) != static_cast<long double>(want[i])) return false;
    } else if (!(std::fabs(g - w) <= 1e-4 * std::fabs(w))) {  // CUB sums floats in float
      return false;
    }
  }
  return true;
}

/// CUB's temporary storage for one call, sized by a first call.
template <class Call>
DeviceMatrix<std::uint8_t> cub_temp(Call call) {
  std::size_t bytes = 0;
  DEVMAT_BENCH_CUDA(call(nullptr, bytes));
  return DeviceMatrix<std::uint8_t>(1, static_cast<Index>(bytes > 0 ? bytes : 1));
}

std::string shape_of(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

// ------------------------------------------------------------------ sum
template <class T>
void register_sum(Index n) {
  using S = sum_t<T>;
  const double bytes = static_cast<double>(n) * sizeof(T);
  const Index rows = n >= 1024 ? 1024 : 1, cols = n / rows;
  const std::string sz = std::to_string(n);
  benchmark::RegisterBenchmark(b::name("sum", dtype<T>(), sz, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    const cudaStream_t s = A.stream().native();
    // Check once against CUB (exact for integers).
    DeviceMatrix<S> ref(1, 1);
    auto call = [&](void* tmp, std::size_t& tb) { return cub::DeviceReduce::Sum(tmp, tb, A.data(), ref.data(), n, s); };
    auto tmp = cub_temp(call);
    std::size_t tb = static_cast<std::size_t>(tmp.size());
    DEVMAT_BENCH_CUDA(call(tmp.data(), tb));
    if (!agrees(std::vector<S>{A.sum()}, ref.to_vector())) return st.SkipWithError("sum disagrees with CUB");
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { auto r = A.sum_async(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(b::name("sum", dtype<T>(), sz, "cub").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    const cudaStream_t s = A.stream().native();
    DeviceMatrix<S> out(1, 1);
    auto call = [&](void* tmp, std::size_t& tb) { return cub::DeviceReduce::Sum(tmp, tb, A.data(), out.data(), n, s); };
    auto tmp = cub_temp(call);
    std::size_t tb = static_cast<std::size_t>(tmp.size());
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { DEVMAT_BENCH_CUDA(call(tmp.data(), tb)); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// One configuration of launch_reduce, beside the library's sum() on the same input.
template <class T, int Threads, int Unroll, int Oversub>
void register_sum_config(Index n) {
  using S = sum_t<T>;
  using Cfg = d::ReduceConfig<Threads, Unroll, Oversub>;
  const double bytes = static_cast<double>(n) * sizeof(T);
  const std::string impl = "ours-t" + std::to_string(Threads) + "u" + std::to_string(Unroll) + "x" + std::to_string(Oversub);
  benchmark::RegisterBenchmark(b::name("sum", dtype<T>(), std::to_string(n), impl).c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(1024, n / 1024);
    const Stream stream = A.stream();
    DeviceMatrix<S> out(1, 1);
    auto op = [&] {
      d::launch_reduce<d::SumReducer<T>, Cfg>(stream, A.data(), n, out.data(), d::CastTo<d::sum_acc_t<T>, S>{});
    };
    op();
    if (!agrees(out.to_vector(), std::vector<S>{A.sum()})) return st.SkipWithError("sum disagrees with sum()");
    b::time_on_stream(st, stream.native(), bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ row and column sums
/// The bounds a row or column sum of a rows x cols matrix of T (out_elems results of S) is
/// measured against, each a cub::DeviceReduce::Sum, as <op>/<dtype>/<shape>/<impl>, GB/s counting
/// the bytes the partial reduction reads: "cub-reduce-bound", a sum over those bytes (f32 as f32,
/// other types as 32-bit words: the memory-speed bound, a partial reduction reads what a full one
/// reads and writes little more); "cub-reduce-write-bound", that sum followed by a write of the
/// output's bytes (cudaMemsetAsync: the bytes the partial reduction moves, where the output caps
/// the first bound's ratio: row sums of R x C at most C / (C + 1) of it, column sums R / (R + 1),
/// 0.75 for 3 rows, 0.94 for 16 columns); "cub-reduce-moved", one sum over as many elements as the
/// bytes read and written together (one pass: a device cannot move them faster than it sums them),
/// so ours / cub-reduce-moved is the time CUB takes to move our bytes over our time.
template <class T, class S = sum_t<T>>
void register_reduce_bounds(const std::string& op, Index rows, Index cols, Index out_elems) {
  // f32 sums f32 elements, other types their bytes as 32-bit words.
  using W = std::conditional_t<std::is_same_v<T, float>, float, std::int32_t>;
  using Sum = std::conditional_t<std::is_same_v<T, float>, float, std::int64_t>;
  const double bytes = static_cast<double>(rows) * cols * sizeof(T);
  const double out_bytes = static_cast<double>(out_elems) * sizeof(S);
  for (const char* impl : {"cub-reduce-bound", "cub-reduce-write-bound", "cub-reduce-moved"}) {
    const bool write = std::string(impl) == "cub-reduce-write-bound", moved = std::string(impl) == "cub-reduce-moved";
    benchmark::RegisterBenchmark(b::name(op, dtype<T>(), shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
      const auto A = random_matrix<T>(moved ? 1 : rows, moved ? 1 : cols);  // moved: sums M alone
      const auto M = random_matrix<W>(1, moved ? static_cast<Index>((bytes + out_bytes) / sizeof(W)) : 1);
      const cudaStream_t s = A.stream().native();
      const Index words = moved ? M.size() : static_cast<Index>(bytes / sizeof(W));
      const W* w = moved ? M.data() : reinterpret_cast<const W*>(A.data());
      DeviceMatrix<Sum> sum(1, 1);
      DeviceMatrix<S> out(write ? out_elems : 1, 1);
      auto call = [&](void* tmp, std::size_t& tb) { return cub::DeviceReduce::Sum(tmp, tb, w, sum.data(), words, s); };
      auto tmp = cub_temp(call);
      std::size_t tb = static_cast<std::size_t>(tmp.size());
      b::time_on_stream(st, s, bytes, b::kGBps, [&] {
        DEVMAT_BENCH_CUDA(call(tmp.data(), tb));
        if (write) DEVMAT_BENCH_CUDA(cudaMemsetAsync(out.data(), 0, static_cast<std::size_t>(out_elems) * sizeof(S), s));
      });
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

void register_row_sums(Index rows, Index cols) {
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  const std::string sh = shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("row_sums", "f32", sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    // Check once against CUB's segmented sum.
    std::vector<std::int64_t> h_off(static_cast<std::size_t>(rows + 1));
    for (Index r = 0; r <= rows; ++r) h_off[static_cast<std::size_t>(r)] = r * cols;
    const auto off = DeviceMatrix<std::int64_t>::from_vector(h_off, 1, rows + 1);
    DeviceMatrix<float> ref(rows, 1);
    const cudaStream_t s = A.stream().native();
    auto call = [&](void* tmp, std::size_t& tb) {
      return cub::DeviceSegmentedReduce::Sum(tmp, tb, A.data(), ref.data(), rows, off.data(), off.data() + 1, s);
    };
    auto tmp = cub_temp(call);
    std::size_t tb = static_cast<std::size_t>(tmp.size());
    DEVMAT_BENCH_CUDA(call(tmp.data(), tb));
    if (!agrees(A.row_sums().to_vector(), ref.to_vector())) return st.SkipWithError("row_sums disagrees with CUB");
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { auto r = A.row_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  // The bound first: the table pairs "ours" with the first reference it meets.
  register_reduce_bounds<float>("row_sums", rows, cols, rows);
  benchmark::RegisterBenchmark(b::name("row_sums", "f32", sh, "cub-segmented").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    std::vector<std::int64_t> h_off(static_cast<std::size_t>(rows + 1));
    for (Index r = 0; r <= rows; ++r) h_off[static_cast<std::size_t>(r)] = r * cols;
    const auto off = DeviceMatrix<std::int64_t>::from_vector(h_off, 1, rows + 1);
    DeviceMatrix<float> out(rows, 1);
    const cudaStream_t s = A.stream().native();
    auto call = [&](void* tmp, std::size_t& tb) {
      return cub::DeviceSegmentedReduce::Sum(tmp, tb, A.data(), out.data(), rows, off.data(), off.data() + 1, s);
    };
    auto tmp = cub_temp(call);
    std::size_t tb = static_cast<std::size_t>(tmp.size());
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { DEVMAT_BENCH_CUDA(call(tmp.data(), tb)); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// One configuration of launch_row_sums (block_min_cols picks warp or block per row).
template <int BlockThreads, int Unroll>
void register_row_sums_config(Index rows, Index cols, Index block_min_cols, const std::string& impl) {
  using Cfg = d::RowSumsConfig<BlockThreads, Unroll, 8192>;
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  benchmark::RegisterBenchmark(b::name("row_sums", "f32", shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    const Stream stream = A.stream();
    DeviceMatrix<float> out(rows, 1);
    auto op = [&] { d::launch_row_sums<float, Cfg>(stream, A.data(), rows, cols, cols, out.data(), block_min_cols); };
    op();
    if (!agrees(out.to_vector(), A.row_sums().to_vector())) return st.SkipWithError("row sums disagree with row_sums()");
    b::time_on_stream(st, stream.native(), bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// One configuration of the short-row teams (launch_row_team<L, G, K>: L lanes a row, G rows
/// at a time, K chunks a lane), beside the library's row_sums() on the same input.
template <int L, int G, int K>
void register_row_team_config(Index rows, Index cols) {
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  const std::string impl = "ours-l" + std::to_string(L) + "g" + std::to_string(G) + "k" + std::to_string(K);
  benchmark::RegisterBenchmark(b::name("row_sums", "f32", shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    const cudaStream_t s = A.stream().native();
    DeviceMatrix<float> out(rows, 1);
    const Index chunks = d::row_chunks(A.data(), rows, cols, cols);
    if (chunks > Index(L) * K * 64) return st.SkipWithError("rows too long for this configuration");
    auto op = [&] { d::launch_row_team<float, L, G, K>(s, A.data(), rows, cols, cols, chunks, out.data()); };
    op();
    if (!agrees(out.to_vector(), A.row_sums().to_vector())) return st.SkipWithError("row sums disagree with row_sums()");
    b::time_on_stream(st, s, bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}

// ------------------------------------------------------------------ column sums
void register_col_sums(Index rows, Index cols) {
  const Index n = rows * cols;
  const double bytes = static_cast<double>(n) * sizeof(float);
  const std::string sh = shape_of(rows, cols);
  benchmark::RegisterBenchmark(b::name("col_sums", "f32", sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    const cudaStream_t s = A.stream().native();
    auto ref = DeviceMatrix<double>::zeros(1, cols, A.stream());
    const dim3 grid(static_cast<unsigned>((cols + 255) / 256), static_cast<unsigned>(rows < 1024 ? rows : 1024));
    naive_col_sums_kernel<<<grid, 256, 0, s>>>(A.data(), rows, cols, ref.data());
    DEVMAT_BENCH_CUDA(cudaGetLastError());
    if (!agrees(A.col_sums().to_vector(), ref.to_vector())) return st.SkipWithError("col_sums disagrees with the naive reference");
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { auto r = A.col_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_reduce_bounds<float>("col_sums", rows, cols, cols);
}

/// One configuration of launch_col_sums.
template <int WX, int WY, int Unroll>
void register_col_sums_config(Index rows, Index cols) {
  using Cfg = d::ColSumsConfig<WX, WY, Unroll>;
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  const std::string impl = "ours-x" + std::to_string(WX) + "y" + std::to_string(WY) + "u" + std::to_string(Unroll);
  benchmark::RegisterBenchmark(b::name("col_sums", "f32", shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    const Stream stream = A.stream();
    DeviceMatrix<float> out(1, cols);
    auto op = [&] { d::launch_col_sums<float, Cfg>(stream, A.data(), rows, cols, cols, out.data()); };
    op();
    if (!agrees(out.to_vector(), A.col_sums().to_vector())) return st.SkipWithError("col sums disagree with col_sums()");
    b::time_on_stream(st, stream.native(), bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
/// The short-wide column kernel with U rows in flight per thread (cols a multiple of 4).
template <int U>
void register_col_wide_config(Index rows, Index cols) {
  const double bytes = static_cast<double>(rows) * cols * sizeof(float);
  const std::string impl = "ours-wide-u" + std::to_string(U);
  benchmark::RegisterBenchmark(b::name("col_sums", "f32", shape_of(rows, cols), impl).c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<float>(rows, cols);
    const cudaStream_t s = A.stream().native();
    DeviceMatrix<float> out(1, cols);
    const auto grid = static_cast<unsigned>(d::ceil_div(cols / 4, d::kTeamThreads));
    auto op = [&] {
      d::launch(&d::col_sums_wide_kernel<float, 4, U, float>, grid, d::kTeamThreads, 0, s, A.data(), rows, cols, cols,
                out.data());
    };
    op();
    if (!agrees(out.to_vector(), A.col_sums().to_vector())) return st.SkipWithError("col sums disagree with col_sums()");
    b::time_on_stream(st, s, bytes, b::kGBps, op);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
}
// ------------------------------------------------------------------ other element types
/// One row sum per thread, in double: the check of the typed rows below.
template <class T>
__global__ void naive_row_sums_kernel(const T* in, Index rows, Index cols, double* out) {
  const Index r = blockIdx.x * Index(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  double s = 0;
  for (Index c = 0; c < cols; ++c) s += static_cast<double>(in[r * cols + c]);
  out[r] = s;
}

/// row_sums or col_sums of a rows x cols matrix of T as <op>/<dtype>/<shape>/ours, beside the
/// bounds of the f32 rows for the same bytes (register_reduce_bounds).
template <class T>
void register_partial_typed(bool row, Index rows, Index cols) {
  using S = sum_t<T>;
  const std::string op = row ? "row_sums" : "col_sums", sh = shape_of(rows, cols);
  const double bytes = static_cast<double>(rows) * cols * sizeof(T);
  const Index out_elems = row ? rows : cols;
  benchmark::RegisterBenchmark(b::name(op, dtype<T>(), sh, "ours").c_str(), [=](benchmark::State& st) {
    const auto A = random_matrix<T>(rows, cols);
    const cudaStream_t s = A.stream().native();
    auto ref = DeviceMatrix<double>::zeros(out_elems, 1, A.stream());
    if (row) {
      naive_row_sums_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(A.data(), rows, cols, ref.data());
    } else {
      const dim3 grid(static_cast<unsigned>((cols + 255) / 256), static_cast<unsigned>(rows < 1024 ? rows : 1024));
      naive_col_sums_kernel<<<grid, 256, 0, s>>>(A.data(), rows, cols, ref.data());
    }
    DEVMAT_BENCH_CUDA(cudaGetLastError());
    const std::vector<S> got = row ? A.row_sums().to_vector() : A.col_sums().to_vector();
    if (!agrees(got, ref.to_vector())) return st.SkipWithError("disagrees with the naive reference");
    b::time_on_stream(st, s, bytes, b::kGBps, [&] { auto r = row ? A.row_sums() : A.col_sums(); });
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  register_reduce_bounds<T>(op, rows, cols, out_elems);
}

/// Every narrow configuration under trial of `kind` that takes a dense rows x cols matrix of T,
/// beside the library's row_sums() or col_sums() on the same input.
template <class T = float>
void register_narrow_trials(d::NarrowKind kind, Index rows, Index cols) {
  using Trials = d::NarrowTrials<T>;
  using S = sum_t<T>;
  const bool row = kind == d::NarrowKind::row_sums;
  const double bytes = static_cast<double>(rows) * cols * sizeof(T);
  for (int i = 0; i < Trials::kCount; ++i) {
    const d::NarrowTrial<T> trial = Trials::kAll[i];
    if (trial.kind != kind || !trial.takes(nullptr, rows, cols, cols)) continue;
    const std::string op = row ? "row_sums" : "col_sums";
    benchmark::RegisterBenchmark(b::name(op, dtype<T>(), shape_of(rows, cols), trial.name).c_str(), [=](benchmark::State& st) {
      const auto A = random_matrix<T>(rows, cols);
      const Stream stream = A.stream();
      if (!trial.takes(A.data(), rows, cols, cols)) return st.SkipWithError("the configuration does not take this matrix");
      DeviceMatrix<S> out(row ? rows : cols, 1);
      auto op_run = [&] { trial.launch(stream, A.data(), rows, cols, cols, out.data()); };
      op_run();
      const std::vector<S> want = row ? A.row_sums().to_vector() : A.col_sums().to_vector();
      if (!agrees(out.to_vector(), want)) return st.SkipWithError("the configuration disagrees with the library");
      b::time_on_stream(st, stream.native(), bytes, b::kGBps, op_run);
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}
}  // namespace

int main(int argc, char** argv) {
  const Index n28 = Index(1) << 28;
  register_sum<float>(n28);
  register_sum_config<float, 256, 2, 1>(n28);
  register_sum_config<float, 256, 4, 1>(n28);  // the default, launched directly
  register_sum_config<float, 256, 8, 1>(n28);
  register_sum_config<float, 512, 4, 1>(n28);
  register_sum_config<float, 256, 4, 4>(n28);
  register_sum<float>(Index(1) << 24);  // 64 MiB: partly served from L2
  register_sum<double>(Index(1) << 27);
  register_sum<std::int32_t>(n28);
  register_sum<std::uint8_t>(Index(1) << 30);

  // The issue's narrow and wide shapes in the other element types, first (so a run cut by its time
  // limit reaches them; --benchmark_filter='^(row_sums|col_sums)/(u8|i32|f64)/' runs them alone).
  // Rows of 16 doubles are 8 chunks, of 16 i32 4, of 16 bytes 1: all three dense and aligned, so
  // the flat row stream (kRowFlatDefault); the short-wide column sums of odd width read single
  // elements.
  register_partial_typed<double>(true, Index(1) << 23, 16);
  register_partial_typed<std::int32_t>(true, Index(1) << 24, 16);
  register_partial_typed<std::uint8_t>(true, Index(1) << 24, 16);
  register_partial_typed<double>(false, 67, 1000003);
  register_partial_typed<std::int32_t>(false, 67, 1000003);
  register_partial_typed<std::uint8_t>(false, 67, 1000003);
  register_partial_typed<std::uint8_t>(false, 4097, 4095);  // an odd-sized image: rows at every offset
  register_partial_typed<std::int32_t>(false, 16385, 16383);  // odd squares: every row at another phase
  register_partial_typed<double>(false, 16383, 16385);
  // Their trials: the shared-memory tiles and the flat row stream (kRowFlatDefault), the
  // element-tile column kernel and the short-wide kernel forced.
  register_narrow_trials<double>(d::NarrowKind::row_sums, Index(1) << 23, 16);
  register_narrow_trials<std::int32_t>(d::NarrowKind::row_sums, Index(1) << 24, 16);
  register_narrow_trials<std::uint8_t>(d::NarrowKind::row_sums, Index(1) << 24, 16);
  register_narrow_trials<double>(d::NarrowKind::col_sums_any, 67, 1000003);
  register_narrow_trials<std::int32_t>(d::NarrowKind::col_sums_any, 67, 1000003);
  register_narrow_trials<std::uint8_t>(d::NarrowKind::col_sums_any, 67, 1000003);
  register_narrow_trials<std::uint8_t>(d::NarrowKind::col_sums_any, 4097, 4095);
  register_narrow_trials<std::int32_t>(d::NarrowKind::col_sums_any, 16385, 16383);
  register_narrow_trials<double>(d::NarrowKind::col_sums_any, 16383, 16385);

  const Index sq = 16384;
  register_row_sums(sq, sq);
  register_row_sums_config<256, 4>(sq, sq, Index(1) << 40, "ours-warp");
  register_row_sums_config<512, 4>(sq, sq, 8192, "ours-block512");
  register_row_sums_config<256, 8>(sq, sq, 8192, "ours-block256u8");
  // Every aspect, each against the CUB full sum of the same bytes.
  const std::vector<std::pair<Index, Index>> aspects = {
      {16, Index(1) << 24},          // wide: rows split into chunks (row sums), a thread per vector (column sums)
      {Index(1) << 24, 16},          // tall and narrow: a warp per 32 rows, 4 lanes a row (f32)
      {Index(1) << 20, 256},         // a warp per row, four rows at a time
      {Index(1) << 22, 3},           // three columns: rows 12 bytes apart, unaligned
      {Index(1) << 24, 3},
      {3, Index(1) << 24},
      {Index(1) << 20, 33},          // odd width: unaligned rows
      {33, Index(1) << 20},
      {1000003, 67},                 // primes
      {67, 1000003},
      {3, (Index(1) << 24) - 1},     // short-wide, odd: rows 3 elements off each other's alignment
      {16385, 16383},                // odd square: every row at another offset
      {5003, 4001}};                 // odd, not square
  for (auto [r, c] : aspects) register_row_sums(r, c);
  // The row teams' neighbours: the default for 2^24x16 f32 is the butterfly (l2g4k2 before it), for
  // 2^20x256 l32g4k2.
  register_row_team_config<2, 8, 2>(Index(1) << 24, 16);
  register_row_team_config<4, 4, 1>(Index(1) << 24, 16);
  register_row_team_config<1, 4, 4>(Index(1) << 24, 16);
  register_row_team_config<32, 2, 4>(Index(1) << 20, 256);
  register_row_team_config<16, 4, 4>(Index(1) << 20, 256);
  register_row_team_config<2, 4, 2>(Index(1) << 24, 16);  // the teams' default there before the butterfly
  // The narrow rows' trials: shared-memory tiles of whole rows (the registers-only kernel for 3
  // columns, 0.74-0.84, and the shuffled-lane column sums of short-wide rows, 0.30-0.61, lost to
  // these and to the defaults in the 2026-11-30 21:10 run and were removed).
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{
           {Index(1) << 22, 3}, {Index(1) << 24, 3}, {Index(1) << 20, 33}, {1000003, 67}, {Index(1) << 24, 16}})
    register_narrow_trials(d::NarrowKind::row_sums, r, c);
  // Longer rows off 16-byte boundaries (the cp.async ring, a thread or 2 to 8 lanes a row, since
  // session 22; the teams before), f32 and the other element types, with their trials.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{{1000003, 50}, {1000003, 101}, {500009, 203}, {1000003, 509}}) {
    register_row_sums(r, c);
    register_narrow_trials(d::NarrowKind::row_sums, r, c);
  }
  register_partial_typed<std::uint8_t>(true, 4000037, 13);
  register_partial_typed<std::uint8_t>(true, 4000037, 67);
  register_partial_typed<std::int32_t>(true, 1000003, 67);
  register_partial_typed<double>(true, 1000003, 67);
  register_narrow_trials<std::uint8_t>(d::NarrowKind::row_sums, 4000037, 13);
  register_narrow_trials<std::uint8_t>(d::NarrowKind::row_sums, 4000037, 67);
  register_narrow_trials<std::int32_t>(d::NarrowKind::row_sums, 1000003, 67);
  register_narrow_trials<double>(d::NarrowKind::row_sums, 1000003, 67);
  register_col_sums(sq, sq);
  register_col_sums_config<4, 2, 4>(sq, sq);
  register_col_sums_config<2, 4, 4>(sq, sq);
  register_col_sums_config<1, 8, 8>(sq, sq);
  for (auto [r, c] : aspects) register_col_sums(r, c);
  // The column trials: one flat stream for tall-narrow shapes.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{
           {Index(1) << 22, 3}, {Index(1) << 24, 3}, {Index(1) << 20, 33}, {1000003, 67}, {Index(1) << 24, 16}})
    register_narrow_trials(d::NarrowKind::col_sums_tall, r, c);
  // Column sums of unaligned rows: the element tiles, the short-wide kernel.
  for (auto [r, c] : std::vector<std::pair<Index, Index>>{
           {67, 1000003}, {3, (Index(1) << 24) - 1}, {16385, 16383}, {5003, 4001}, {1000003, 67}, {Index(1) << 20, 33}})
    register_narrow_trials(d::NarrowKind::col_sums_any, r, c);
  register_col_wide_config<8>(16, Index(1) << 24);  // the default has 4 rows in flight
  register_col_wide_config<16>(16, Index(1) << 24);
  register_col_wide_config<16>(33, Index(1) << 20);

  // DEVMAT_BENCH_REDUCE_SHAPES="row:1000003x101,col:67x999,row-u8:4000037x13" adds shapes of the
  // caller's: row or column sums (f32: ours and the bounds; -u8, -i32, -f64: the typed rows), with
  // every row trial, or every column trial for any window, that takes the shape.
  if (const char* extra = std::getenv("DEVMAT_BENCH_REDUCE_SHAPES")) {
    std::istringstream list(extra);
    std::string item;
    while (std::getline(list, item, ',')) {
      const auto colon = item.find(':'), x = item.find('x', colon == std::string::npos ? 0 : colon);
      if (colon == std::string::npos || x == std::string::npos) continue;
      const std::string what = item.substr(0, colon);
      const Index r = std::stoll(item.substr(colon + 1, x - colon - 1)), c = std::stoll(item.substr(x + 1));
      const bool row = what.rfind("row", 0) == 0;
      const d::NarrowKind kind = row ? d::NarrowKind::row_sums : d::NarrowKind::col_sums_any;
      const std::string type = what.find('-') == std::string::npos ? "f32" : what.substr(what.find('-') + 1);
      if (type == "f32") {
        if (row) register_row_sums(r, c);
        else register_col_sums(r, c);
        register_narrow_trials<float>(kind, r, c);
      } else if (type == "u8") {
        register_partial_typed<std::uint8_t>(row, r, c);
        register_narrow_trials<std::uint8_t>(kind, r, c);
      } else if (type == "i32") {
        register_partial_typed<std::int32_t>(row, r, c);
        register_narrow_trials<std::int32_t>(kind, r, c);
      } else if (type == "f64") {
        register_partial_typed<double>(row, r, c);
        register_narrow_trials<double>(kind, r, c);
      }
    }
  }

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
