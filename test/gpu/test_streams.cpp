// Streams, lifetime and memory: cross-stream ordering, threads, leaks, out of memory.
#include "detail/runtime.hpp"
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <devmat/memory.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
std::size_t live(const PoolStats& s) { return s.used - s.cached; }

}  // namespace

TEST_CASE("an operation waits for work queued on an operand's other stream, which may die at once") {
  Stream s1 = Stream::create(), s2 = Stream::create();
  const Index r = 777, c = 1023;
  const HostMatrix<float> ha = random_matrix<float>(r, c);
  auto A = to_device(ha, s1);
  DeviceMatrix<float> C;
  {
    DeviceMatrix<float> B(r, c, s2);
    spin(s2.native(), 200);   // a long kernel still queued on B's stream ...
    B.fill(2.5f);             // ... before B gets its values
    C = A + B;                // runs on s1: must wait for s2's queue
  }                           // B destroyed at once; its memory must outlive C's read
  // Reuse of B's memory on s2 must not overwrite it before C's kernel has read it.
  auto junk = DeviceMatrix<float>::constant(r, c, -1e30f, s2);
  CHECK(C.stream() == s1);
  const HostMatrix<float> want = (ha.array() + 2.5f).matrix();
  CHECK(to_eigen(C) == want);
}

TEST_CASE("cross-stream chain synchronised only at the end") {
  Stream s1 = Stream::create(), s2 = Stream::create(), s3 = Stream::create();
  const Index r = 513, c = 257;
  auto A = DeviceMatrix<double>::constant(r, c, 1.0, s1);
  auto B = DeviceMatrix<double>::constant(r, c, 2.0, s2);
  spin(s2.native(), 100);
  B *= 3.0;  // 6 on s2, after the spin
  auto D = B - A;               // on s2: waits for s1 (A)
  auto E = DeviceMatrix<double>::constant(r, c, 10.0, s3);
  spin(s3.native(), 50);
  E += D;                        // on s3: waits for s2 (D), 15
  A = DeviceMatrix<double>();    // drop operands early
  B = DeviceMatrix<double>();
  D = DeviceMatrix<double>();
  E.stream().synchronize();      // the only synchronisation
  std::vector<double> v(static_cast<std::size_t>(r * c));
  CHECK(cudaMemcpy(v.data(), E.data(), v.size() * sizeof(double), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(std::count(v.begin(), v.end(), 15.0) == r * c);
}

TEST_CASE("a foreign use delays writes on the owner stream and set_stream moves a matrix safely") {
  Stream s1 = Stream::create(), s2 = Stream::create();
  auto A = DeviceMatrix<float>::constant(300, 300, 1.0f, s1);
  auto B = DeviceMatrix<float>::constant(300, 300, 0.0f, s2);
  spin(s2.native(), 100);
  B += A;         // on s2, reads A after a long spin
  A.fill(100.f);  // on s1: must not overtake B's read of A
  CHECK((to_eigen(B).array() == 1.0f).all());
  CHECK((to_eigen(A).array() == 100.0f).all());

  spin(s1.native(), 100);
  A.fill(7.f);
  A.set_stream(s2);
  CHECK(A.stream() == s2);
  auto C = A + A;  // on s2, after s1's fill
  CHECK(C.stream() == s2);
  CHECK((to_eigen(C).array() == 14.0f).all());
}

TEST_CASE("host reads wait only for the matrix's own stream") {
  Stream s1 = Stream::create(), s2 = Stream::create();
  auto A = DeviceMatrix<std::int32_t>::constant(64, 64, 5, s1);
  // The first use of a kernel in a process loads it (CUDA's lazy loading), which may wait for
  // the whole device: load the reductions before the unrelated work is queued.
  (void)A.sum();
  (void)A.max();
  spin(s2.native(), 1000);  // unrelated long work
  CHECK(A.to_vector() == std::vector<std::int32_t>(64 * 64, 5));
  CHECK(A.sum() == 5 * 64 * 64);
  CHECK(A.max() == 5);
  if (!under_sanitizer()) CHECK(cudaStreamQuery(s2.native()) == cudaErrorNotReady);  // not waited for
  s2.synchronize();
}

TEST_CASE("matrices share ownership of their stream") {
  DeviceMatrix<float> A;
  {
    Stream s = Stream::create();
    A = DeviceMatrix<float>::constant(100, 100, 4.f, s);
  }  // the last named Stream is gone; A keeps the stream alive
  auto B = A * 0.5f;
  CHECK((to_eigen(B).array() == 2.f).all());
}

TEST_CASE("each host thread gets its own default stream, and threads work at once") {
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<cudaStream_t> defaults(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      try {
        const Index n = 200 + 37 * t;
        auto A = DeviceMatrix<float>::constant(n, n, float(t));   // per-thread stream
        defaults[t] = A.stream().native();
        Stream own = Stream::create();
        auto B = DeviceMatrix<float>::constant(n, n, 1.f, own);
        for (int i = 0; i < (under_sanitizer() ? 5 : 50); ++i) {
          auto C = (A + B) * 2.f - A;  // t + 2
          auto D = C - B;              // t + 1
          std::vector<float> v = D.to_vector();
          if (std::count(v.begin(), v.end(), float(t + 1)) != n * n) ++failures;
          if (D.sum() != float(t + 1) * n * n) ++failures;
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& th : pool) th.join();
  CHECK(failures == 0);
  for (int i = 0; i < kThreads; ++i)
    for (int j = i + 1; j < kThreads; ++j) CHECK(defaults[i] != defaults[j]);
}

TEST_CASE("create/operate/destroy cycles leak no device memory, temporaries reuse the pool") {
  Stream s = Stream::create();
  auto A = DeviceMatrix<float>::constant(64, 64, 1.f, s);
  auto B = DeviceMatrix<float>::constant(64, 64, 2.f, s);
  { auto warm = A + B - A; }
  s.synchronize();
  const PoolStats before = pool_stats();
  const int cycles = under_sanitizer() ? 2000 : 100000;
  for (int i = 0; i < cycles; ++i) {
    DeviceMatrix<float> C = A + B - A;  // one temporary, reused in place
    DeviceMatrix<float> D(17, 33, s);
    D.fill(1.f);
  }
  s.synchronize();
  const PoolStats after = pool_stats();
  CHECK(live(after) == live(before));
  CHECK(after.reserved <= before.reserved + (8u << 20));  // freed blocks were reused
  CHECK(after.cached <= (256u << 20));
  CHECK((to_eigen(A + B - A).array() == 2.f).all());
}

TEST_CASE("an image-sized block freed on an owned stream comes back from the cache, no allocator call") {
  // A 4096x4096 u8 image (16 MiB) and an f32 one (64 MiB, the largest block cached): dropped and
  // made again on the same stream, the same memory comes back and the cache held it meanwhile.
  // Blocks above 64 MiB go back to the pool. The cache starts empty (it holds 256 MiB at most).
  trim_pool(0);
  Stream s = Stream::create();
  for (const Index cols : {Index(4096), Index(4096 * 4), Index(4096 * 4 + 512)}) {
    CAPTURE(cols);
    const bool cacheable = cols <= 4096 * 4;
    const PoolStats before = pool_stats();
    auto a = DeviceMatrix<std::uint8_t>::constant(4096, cols, 7, s);
    const std::uint8_t* first = a.data();
    a = DeviceMatrix<std::uint8_t>();
    const PoolStats held = pool_stats();
    CHECK(held.cached == before.cached + (cacheable ? static_cast<std::size_t>(4096 * cols) : 0));
    auto b = DeviceMatrix<std::uint8_t>::constant(4096, cols, 9, s);
    if (cacheable) CHECK(b.data() == first);
    CHECK(pool_stats().cached == before.cached);
    const std::vector<std::uint8_t> v = b.to_vector();
    CHECK(std::count(v.begin(), v.end(), std::uint8_t{9}) == 4096 * cols);
  }
}

TEST_CASE("a full cache makes room for a newly freed block: its oldest blocks go back to the pool") {
  // Four 64 MiB f32 images fill the cache (256 MiB); a 16 MiB u8 image freed after them must
  // still be cached (the oldest f32 block giving way), so that making it again calls no
  // allocator and returns the same memory. A cache that refused blocks once full (as it did)
  // paid the pool's allocator on every call of a u8 loop that ran after f32 work.
  trim_pool(0);
  Stream s = Stream::create();
  {
    std::vector<DeviceMatrix<float>> big;
    for (int i = 0; i < 4; ++i) big.emplace_back(4096, 4096, s);
  }
  REQUIRE(pool_stats().cached == (std::size_t(256) << 20));
  auto a = DeviceMatrix<std::uint8_t>::constant(4096, 4096, 7, s);
  const std::uint8_t* first = a.data();
  a = DeviceMatrix<std::uint8_t>();
  CHECK(pool_stats().cached == (std::size_t(192 + 16) << 20));
  const std::size_t calls = detail::pool_allocations();
  auto b = DeviceMatrix<std::uint8_t>::constant(4096, 4096, 9, s);
  CHECK(b.data() == first);
  CHECK(detail::pool_allocations() == calls);
  const std::vector<std::uint8_t> v = b.to_vector();
  CHECK(std::count(v.begin(), v.end(), std::uint8_t{9}) == 4096 * 4096);
}

TEST_CASE("with several blocks of one size cached, an allocation takes the oldest", "[cache_order]") {
  // Three 1 MiB blocks freed in order a, b, c on one owned stream: the cache hands back a, then
  // b, with no call into the pool's allocator; a loop that drops and remakes one output cycles
  // through the cached blocks. Different sizes or streams never match.
  trim_pool(0);
  Stream s = Stream::create(), other = Stream::create();
  const Index side = 1024;
  std::vector<const std::uint8_t*> freed;
  {
    std::vector<DeviceMatrix<std::uint8_t>> keep;
    for (int i = 0; i < 3; ++i) keep.emplace_back(side, side, s);
    auto odd = DeviceMatrix<std::uint8_t>(side, side + 512, s);   // another size, freed last
    auto foreign = DeviceMatrix<std::uint8_t>(side, side, other);  // another stream, freed last
    for (auto& m : keep) {
      freed.push_back(m.data());
      m = DeviceMatrix<std::uint8_t>();
    }
  }
  const std::size_t calls = detail::pool_allocations();
  auto first = DeviceMatrix<std::uint8_t>::constant(side, side, 3, s);
  CHECK(first.data() == freed[0]);
  auto second = DeviceMatrix<std::uint8_t>(side, side, s);
  CHECK(second.data() == freed[1]);
  CHECK(detail::pool_allocations() == calls);
  second = DeviceMatrix<std::uint8_t>();
  // A benchmark's loop: drop the output, make it again.
  std::vector<const std::uint8_t*> got;
  DeviceMatrix<std::uint8_t> out(side, side, s);
  CHECK(out.data() == freed[2]);
  for (int i = 0; i < 4; ++i) {
    got.push_back(out.data());
    out = DeviceMatrix<std::uint8_t>();
    out = DeviceMatrix<std::uint8_t>::constant(side, side, static_cast<std::uint8_t>(i), s);
  }
  CHECK(detail::pool_allocations() == calls);
  CHECK(got[1] != got[0]);
  for (const std::uint8_t* p : got) CHECK((p == freed[1] || p == freed[2]));
  const std::vector<std::uint8_t> v = out.to_vector();
  CHECK(std::count(v.begin(), v.end(), std::uint8_t{3}) == side * side);
  const std::vector<std::uint8_t> f = first.to_vector();
  CHECK(std::count(f.begin(), f.end(), std::uint8_t{3}) == side * side);
}

TEST_CASE("running out of device memory throws out_of_memory, and the program keeps working") {
  size_t free_b = 0, total_b = 0;
  REQUIRE(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess);
  Stream s = Stream::create();
  auto keep = DeviceMatrix<double>::constant(10, 10, 3.0, s);
  s.synchronize();
  const PoolStats before = pool_stats();
  const Index rows = 1 << 16;
  const Index cols = static_cast<Index>(total_b / sizeof(float) / rows) + 1024;  // more than the card
  bool threw = false;
  try {
    DeviceMatrix<float> huge(rows, cols, s);
  } catch (const out_of_memory& e) {
    threw = true;
    const std::string w = e.what();
    CAPTURE(w);
    CHECK(e.requested() == static_cast<std::size_t>(rows) * cols * sizeof(float));
    CHECK_THAT(w, contains("out of device memory"));
    CHECK_THAT(w, contains("free"));
  }
  CHECK(threw);
  CHECK_THROWS_AS(DeviceMatrix<std::uint8_t>(Index(1) << 40, Index(1) << 10), std::bad_alloc);
  // Later allocations and kernels work, and nothing leaked.
  auto x = keep + keep;
  CHECK((to_eigen(x).array() == 6.0).all());
  x = DeviceMatrix<double>();
  s.synchronize();
  CHECK(live(pool_stats()) == live(before));
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("trim_pool gives unused memory back") {
  // Memory the pool holds and nothing uses: a 1 GiB block freed to the pool (which keeps freed
  // memory: it has no release threshold), and small blocks kept in the per-stream cache (blocks
  // up to 64 MiB freed on a stream devmat owns). trim_pool must give back both, so every check
  // below fails if it does nothing.
  constexpr std::size_t kBig = std::size_t(1) << 30;
  constexpr int kSmall = 16;
  constexpr std::size_t kSmallBytes = 256 * 256 * sizeof(float);
  Stream s = Stream::create();
  {
    // The small blocks first, so that none can share the big block's allocation from the driver.
    std::vector<DeviceMatrix<float>> small;
    for (int i = 0; i < kSmall; ++i) small.emplace_back(256, 256, s);
    DeviceMatrix<float> big(Index(1) << 15, Index(1) << 13, s);  // 2^28 floats
  }
  s.synchronize();  // the big block's free has completed
  const PoolStats held = pool_stats();
  CAPTURE(held.reserved, held.used, held.cached);
  REQUIRE(held.cached >= kSmall * kSmallBytes);
  REQUIRE(held.reserved >= held.used + kBig);

  trim_pool(0);
  const PoolStats trimmed = pool_stats();
  CAPTURE(trimmed.reserved, trimmed.used, trimmed.cached);
  CHECK(trimmed.cached == 0);
  CHECK(trimmed.reserved + kBig <= held.reserved);  // the unused 1 GiB went back to the driver

  // The cached blocks were freed stream-ordered on s: once s has run, they are unused, and a
  // second trim leaves the pool holding little more than what live matrices use (up to the
  // driver's allocation granularity).
  s.synchronize();
  trim_pool(0);
  const PoolStats after = pool_stats();
  CAPTURE(after.reserved, after.used, after.cached);
  CHECK(after.cached == 0);
  CHECK(after.used + kSmall * kSmallBytes <= held.used);
  CHECK(after.reserved <= after.used + (std::size_t(64) << 20));
}

TEST_CASE("matrices alive at exit do not crash the program") {
  // Destroyed after main returns, possibly after the CUDA runtime has shut down.
  static DeviceMatrix<float> survivor = DeviceMatrix<float>::constant(1000, 1000, 1.f);
  static Stream stream = Stream::create();
  static DeviceMatrix<double> on_own_stream = DeviceMatrix<double>::zeros(10, 10, stream);
  CHECK(survivor.rows() == 1000);
  CHECK(on_own_stream.stream() == stream);
}

TEST_CASE("filling the card until an allocation fails: out_of_memory, then all is usable again") {
  if (under_sanitizer()) DEVMAT_SKIP("under compute-sanitizer, which reports each refused allocation as an API error");
  Stream s = Stream::create();
  const PoolStats before = pool_stats();
  std::vector<DeviceMatrix<std::uint8_t>> hog;
  bool thrown = false;
  try {
    for (int i = 0; i < 1024; ++i) hog.emplace_back(Index(1) << 20, Index(8) << 10, s);  // 8 GiB each
  } catch (const out_of_memory& e) {
    thrown = true;
    CHECK(e.requested() == (std::size_t(8) << 30));
  }
  CHECK(thrown);
  CHECK(hog.size() >= 1);
  hog.clear();
  trim_pool(0);
  auto a = DeviceMatrix<float>::constant(1 << 14, 1 << 14, 2.f, s);  // 1 GiB works again
  auto b = a * 0.5f;
  std::vector<float> v = b.to_vector();
  CHECK(std::count(v.begin(), v.end(), 1.f) == (Index(1) << 28));
  a = DeviceMatrix<float>();
  b = DeviceMatrix<float>();
  s.synchronize();
  CHECK(live(pool_stats()) == live(before));
}
