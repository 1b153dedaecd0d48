#include "support/util.hpp"

#include <cstdio>
#include <cstdlib>

namespace devmat::test {

namespace {
std::uint64_t make_seed() {
  if (const char* s = std::getenv("DEVMAT_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}
}  // namespace

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const std::uint64_t v = make_seed();
    std::printf("devmat tests: random seed %llu (replay with DEVMAT_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(v), static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::mt19937_64& rng() {
  static std::mt19937_64 engine(seed());
  return engine;
}

std::vector<std::pair<Index, Index>> awkward_shapes(int n_random, Index max_dim) {
  std::vector<std::pair<Index, Index>> s = {
      {0, 0}, {0, 5}, {5, 0}, {1, 1}, {1, 7}, {7, 1}, {2, 3}, {3, 2},
      {15, 17}, {16, 16}, {17, 15}, {31, 33}, {32, 32}, {33, 31}, {63, 65}, {64, 64}, {65, 63},
      {127, 129}, {128, 128}, {129, 127}, {255, 257}, {256, 256}, {257, 255},
      {7, 11}, {101, 103}, {509, 521}, {1021, 3}, {3, 1021},
      {4099, 3}, {3, 4099}, {1, 4097}, {4097, 1}, {2, 10007}, {10007, 2}};
  std::uniform_int_distribution<Index> d(1, max_dim);
  for (int i = 0; i < n_random; ++i) s.emplace_back(d(rng()), d(rng()));
  return s;
}

bool under_sanitizer() { return std::getenv("DEVMAT_TEST_SANITIZER") != nullptr; }

std::string shape(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

}  // namespace devmat::test
