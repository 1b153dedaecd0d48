// More than one GPU: a product and a reduction on a matrix sharded over GPUs (devmat::dist).
//
//   dist_matmul                      every GPU of this machine, one process (Communicator::local)
//   dist_matmul RANK NRANKS IDFILE   one process per GPU (Communicator::join_file): start
//                                    NRANKS copies, RANK = 0..NRANKS-1, with the same IDFILE
//                                    (a path on a file system every host sees; rank 0 writes it)
//
// Exits 2 without a GPU. NCCL_NVLS_ENABLE=0 (NVLink multicast off) is set by the library.
#include <devmat/devmat.hpp>
#include <devmat/dist.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  try {
    using namespace devmat;
    Communicator comm;
    if (argc == 4) {
      const int rank = std::atoi(argv[1]), nranks = std::atoi(argv[2]);
      // One GPU per process: here the rank's GPU of this host (a launcher would say which).
      comm = Communicator::join_file(argv[3], rank, nranks, /*device=*/rank);
    } else {
      comm = Communicator::local();
    }
    const Index n = 4096;
    // Rank 0's process provides A; each rank receives its row block.
    std::vector<float> a;
    if (comm.is_local(0)) a.assign(static_cast<std::size_t>(n * n), 0.5f);
    auto A = ShardedMatrix<float>::scatter(a.data(), n, n, comm);
    auto B = ShardedMatrix<float>::constant(n, n, 2.0f, comm);  // sharded by rows too
    ShardedMatrix<float> C = A * B;                 // B's blocks broadcast, overlapped with the products
    C = shardwise([](const DeviceMatrix<float>& c) { return Expr<float>(c * 0.5f + 1.0f); }, C);
    const float total = C.sum();                    // all-reduce: every rank gets it
    if (comm.rank() == 0)
      std::printf("%d ranks: sum = %g (expected %g)\n", comm.size(), total, double(n) * n * (n * 0.5 + 1));
    return 0;
  } catch (const devmat::cuda_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
