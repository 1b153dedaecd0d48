// Communicator::join with two processes on one host: the test starts two copies of itself
// (posix_spawn of /proc/self/exe, the rank in the environment), which meet through
// Communicator::join_file and run the sharded operations against Eigen; then a failed-rank
// case: rank 1 aborts and leaves, rank 0 must get a cuda_error instead of hanging.
// Needs 2 GPUs (one rank each); skipped with fewer.
#include "support/util.hpp"

#include <devmat/dist.hpp>

#include <cuda_runtime_api.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

extern char** environ;

using namespace devmat;
using namespace devmat::test;

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Starts this executable as rank `rank` running the hidden child test case; returns its pid.
pid_t spawn_rank(int rank, const std::string& file, const std::string& scenario, std::uint64_t seed) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  envs.push_back("DEVMAT_JOIN_RANK=" + std::to_string(rank));
  envs.push_back("DEVMAT_JOIN_FILE=" + file);
  envs.push_back("DEVMAT_JOIN_SCENARIO=" + scenario);
  envs.push_back("DEVMAT_JOIN_SEED=" + std::to_string(seed));
  // The failed-rank case waits this long for its vanished peer; the normal case never should.
  envs.push_back(scenario == "fail" ? "DEVMAT_DIST_TIMEOUT=30" : "DEVMAT_DIST_TIMEOUT=300");
  envs.push_back("NCCL_NVLS_ENABLE=0");
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", tag = "[.join-child]";
  char* argv[] = {exe.data(), tag.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) == 0);
  return pid;
}

int wait_rank(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void run_two(const std::string& scenario) {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  char dir[] = "/tmp/devmat_join_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string file = std::string(dir) + "/id";
  const pid_t p0 = spawn_rank(0, file, scenario, seed()), p1 = spawn_rank(1, file, scenario, seed());
  const int rc0 = wait_rank(p0), rc1 = wait_rank(p1);
  std::remove(file.c_str());
  rmdir(dir);
  CAPTURE(scenario);
  CHECK(rc0 == 0);
  CHECK(rc1 == 0);
}

template <class T>
HostMatrix<T> random_shared(std::mt19937_64& g, Index rows, Index cols) {  // the same on both ranks
  HostMatrix<T> h(rows, cols);
  std::uniform_int_distribution<int> d(-20, 20);
  for (Index i = 0; i < h.size(); ++i) h.data()[i] = static_cast<T>(d(g)) / T(4);
  return h;
}

template <class T>
void check_gathered(const ShardedMatrix<T>& m, const HostMatrix<T>& ref, int rank) {
  const std::vector<T> v = m.gather_to_host(0);
  if (rank != 0) {
    CHECK(v.empty());
    return;
  }
  REQUIRE(static_cast<Index>(v.size()) == ref.size());
  CHECK(std::vector<T>(ref.data(), ref.data() + ref.size()) == v);
}

void child_normal(const Communicator& c, int rank, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  for (auto [rows, cols] : std::vector<std::pair<Index, Index>>{{0, 4}, {1, 5}, {2, 3}, {3, 7}, {129, 67}}) {
    CAPTURE(rows, cols, rank);
    const HostMatrix<float> h = random_shared<float>(g, rows, cols), h2 = random_shared<float>(g, rows, cols);
    // Only rank 0 passes data: the others receive their blocks through NCCL.
    const auto m = ShardedMatrix<float>::scatter(rank == 0 ? h.data() : nullptr, rows, cols, c);
    const auto m2 = ShardedMatrix<float>::scatter(rank == 0 ? h2.data() : nullptr, rows, cols, c);
    CHECK(m.shard(rank).rows() == block_rows(rows, 2, rank));
    check_gathered(m, h, rank);
    check_gathered(m + m2, HostMatrix<float>(h + h2), rank);
    check_gathered(m.transpose(), HostMatrix<float>(h.transpose()), rank);
    // Values are quarters of small integers: float sums are exact.
    CHECK(m.sum() == static_cast<float>(h.cast<double>().sum()));
    if (rows > 0) {
      CHECK(m.min() == h.minCoeff());
      CHECK(m.max() == h.maxCoeff());
    }
    const auto cs = m.col_sums();
    c.synchronize();
    const std::vector<float> got = cs.copy(rank).to_vector();
    for (Index j = 0; j < cols; ++j) CHECK(got[static_cast<std::size_t>(j)] == static_cast<float>(h.col(j).cast<double>().sum()));
    // Products: B sharded and B broadcast from rank 1.
    const HostMatrix<float> hb = random_shared<float>(g, cols, 9);
    const auto Bs = ShardedMatrix<float>::scatter(rank == 0 ? hb.data() : nullptr, cols, 9, c);
    DeviceMatrix<float> d;
    if (rank == 1) d = DeviceMatrix<float>::from_host(hb.data(), cols, 9);
    const auto Br = ReplicatedMatrix<float>::broadcast(d, c, 1);
    const HostMatrix<float> ref = (h.cast<double>() * hb.cast<double>()).cast<float>();
    check_gathered(m * Bs, ref, rank);
    check_gathered(m * Br, ref, rank);
  }
  // A shape that differs between the ranks: a shape_error on both, no hang; then it still works.
  const Index rows = rank == 0 ? 10 : 11;
  CHECK_THROWS_AS(ShardedMatrix<float>::scatter(std::vector<float>(static_cast<std::size_t>(rows * 2)), rows, 2, c),
                  shape_error);
  const auto ones = ShardedMatrix<float>::constant(rank == 0 ? 6 : 7, 2, 1.0f, c);
  CHECK_THROWS_AS(ones.sum(), shape_error);
  CHECK(ShardedMatrix<float>::constant(5, 3, 1.0f, c).sum() == 15.0f);
}

void child_fail(Communicator& c, int rank) {
  const auto m = ShardedMatrix<float>::constant(64, 64, 1.0f, c);
  CHECK(m.sum() == 4096.0f);
  if (rank == 1) {
    c.abort();  // this rank fails and leaves: its peer must not hang
    return;
  }
  // Rank 0 waits for a peer that is gone: the failure check (DEVMAT_DIST_TIMEOUT=30) aborts.
  CHECK_THROWS_AS(m.transpose().sum(), cuda_error);
  CHECK(c.aborted());
  CHECK_THROWS_AS(m.sum(), cuda_error);
}

}  // namespace

TEST_CASE("dist join: two processes, one GPU each", "[dist]") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  if (n < 2) DEVMAT_SKIP("Communicator::join with two processes needs 2 GPUs (" + std::to_string(n) + " here)");
  run_two("normal");
}

TEST_CASE("dist join: a failed rank gives its peer a cuda_error", "[dist]") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  if (n < 2) DEVMAT_SKIP("Communicator::join with two processes needs 2 GPUs (" + std::to_string(n) + " here)");
  run_two("fail");
}

TEST_CASE("dist join: a rank's part (started by the cases above)", "[.join-child]") {
  const std::string rank_s = env("DEVMAT_JOIN_RANK");
  if (rank_s.empty()) DEVMAT_SKIP("run by the two-process cases only");
  const int rank = std::atoi(rank_s.c_str());
  REQUIRE(cudaSetDevice(rank) == cudaSuccess);  // one GPU per process, as a launcher would set it
  Communicator c = Communicator::join_file(env("DEVMAT_JOIN_FILE"), rank, 2, rank, 60.0);
  CHECK(c.size() == 2);
  CHECK(c.rank() == rank);
  CHECK(c.device(0) == 0);
  CHECK(c.device(1) == 1);
  if (std::string(env("DEVMAT_JOIN_SCENARIO")) == "fail") child_fail(c, rank);
  else child_normal(c, rank, std::strtoull(env("DEVMAT_JOIN_SEED"), nullptr, 10));
}
