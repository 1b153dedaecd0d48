// The multi-GPU component's host side, with no device (CUDA_VISIBLE_DEVICES=-1, runs in CI): the
// row-block layout, empty handles, errors instead of hangs where no GPU or no peer is there.
#include "support/catch.hpp"

#include <devmat/dist.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

using namespace devmat;
using devmat::test::contains;

TEST_CASE("dist host: row blocks cover the rows once, the first rows % P ranks one more", "[dist]") {
  for (int P : {1, 2, 3, 7, 8}) {
    for (Index rows : {0, 1, 2, 5, 7, 8, 9, 100, 101, 1000003}) {
      CAPTURE(P, rows);
      Index total = 0;
      for (int r = 0; r < P; ++r) {
        CHECK(block_offset(rows, P, r) == total);
        const Index n = block_rows(rows, P, r);
        CHECK(n == rows / P + (r < rows % P ? 1 : 0));
        CHECK(n >= 0);
        total += n;
      }
      CHECK(total == rows);
    }
  }
}

TEST_CASE("dist host: empty handles", "[dist]") {
  const Communicator c;
  CHECK_FALSE(c);
  CHECK(c.size() == 0);
  CHECK(c.local_ranks().empty());
  CHECK_FALSE(c.is_local(0));
  CHECK_FALSE(c.aborted());
  CHECK_THROWS_AS(c.device(0), cuda_error);
  CHECK_THROWS_AS(c.synchronize(), cuda_error);
  const ShardedMatrix<float> m;
  CHECK(m.rows() == 0);
  CHECK(m.cols() == 0);
  CHECK(m.empty());
  CHECK_FALSE(m.comm());
  CHECK(ShardedMatrix<float>::layout == Layout::row_blocks);
}

TEST_CASE("dist host: no device is a cuda_error, not a crash", "[dist]") {
  CHECK_THROWS_AS(Communicator::local(), cuda_error);
  CHECK_THROWS_WITH(Communicator::local(), contains("no CUDA device"));
}

TEST_CASE("dist host: join_file gives up on a missing id file", "[dist]") {
  const std::string path = "/tmp/devmat_dist_host_missing_" + std::to_string(::getpid());
  std::remove(path.c_str());
  CHECK_THROWS_WITH(Communicator::join_file(path, 1, 2, 0, 0.2), contains("waited"));
}
