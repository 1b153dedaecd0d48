// PinnedBuffer and the asynchronous host copies (copy_from_host_async, copy_to_host_async):
// every element on awkward shapes from pinned and pageable memory, stream order against other
// work, no host wait behind queued work, several streams at once, a matrix destroyed right
// after its download, and the errors (thrown before anything is queued).
#include "support/device_helpers.hpp"
#include "support/util.hpp"

#include <devmat/pinned.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace devmat;
using namespace devmat::test;

namespace {
/// Poison bytes in host memory, so an element the copy did not write fails the comparison.
template <class T>
void poison_host(T* p, std::size_t n) {
  std::memset(static_cast<void*>(p), 0x5A, n * sizeof(T));
}
}  // namespace

TEST_CASE("PinnedBuffer: pinned memory, resize keeps the prefix and grows only past capacity, moves", "[pinned]") {
  PinnedBuffer<float> empty;
  CHECK(empty.data() == nullptr);
  CHECK(empty.size() == 0);
  CHECK(empty.empty());
  PinnedBuffer<float> zero(0);
  CHECK(zero.data() == nullptr);

  PinnedBuffer<float> a(1000);
  REQUIRE(a.data() != nullptr);
  CHECK(a.size() == 1000);
  CHECK(a.capacity() == 1000);
  cudaPointerAttributes attr{};
  REQUIRE(cudaPointerGetAttributes(&attr, a.data()) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeHost);  // page-locked, known to CUDA
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) + 0.5f;

  float* const first = a.data();
  a.resize(500);  // within capacity: same memory, prefix kept
  CHECK(a.data() == first);
  CHECK(a.size() == 500);
  CHECK(a.capacity() == 1000);
  a.resize(1000);
  CHECK(a.data() == first);
  a.resize(4099);  // past capacity: new memory, the first 1000 elements kept
  CHECK(a.size() == 4099);
  CHECK(a.capacity() == 4099);
  for (std::size_t i = 0; i < 1000; ++i) REQUIRE(a[i] == static_cast<float>(i) + 0.5f);

  float* const grown = a.data();
  PinnedBuffer<float> b(std::move(a));
  CHECK(b.data() == grown);
  CHECK(b.size() == 4099);
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  CHECK(a.capacity() == 0);
  PinnedBuffer<float> c(3);
  c = std::move(b);
  CHECK(c.data() == grown);
  CHECK(b.empty());
  CHECK(std::distance(c.begin(), c.end()) == 4099);
  CHECK(c[999] == 999.5f);
}

TEMPLATE_TEST_CASE("copy_from_host_async and copy_to_host_async move every element, pinned and pageable", "[pinned]",
                   float, double, std::int32_t, std::uint8_t) {
  using T = TestType;
  const Stream s = Stream::create();
  for (auto [r, c] : awkward_shapes(6, 600)) {
    CAPTURE(shape(r, c));
    const HostMatrix<T> h = random_matrix<T>(r, c, 0, 100);
    const std::size_t n = static_cast<std::size_t>(r * c);
    for (const bool pinned : {true, false}) {
      CAPTURE(pinned);
      PinnedBuffer<T> pin_in(n), pin_out(n);
      std::vector<T> vec_in(n), vec_out(n);
      T* in = pinned ? pin_in.data() : vec_in.data();
      T* out = pinned ? pin_out.data() : vec_out.data();
      if (n) std::memcpy(static_cast<void*>(in), h.data(), n * sizeof(T));
      if (n) poison_host(out, n);
      auto m = DeviceMatrix<T>::constant(r, c, poison_value<T>(), s);
      m.copy_from_host_async(in);
      m.copy_to_host_async(out);
      s.synchronize();
      CHECK(std::equal(out, out + n, h.data()));
      CHECK(to_eigen(m) == h);
    }
  }
}

TEST_CASE("async copies run in stream order, after queued work, without the host waiting for it", "[pinned]") {
  const Stream s = Stream::create();
  const Index r = 301, c = 517;
  const std::size_t n = static_cast<std::size_t>(r * c);
  const HostMatrix<float> h = random_matrix<float>(r, c);
  PinnedBuffer<float> in(n), out(n);
  std::memcpy(in.data(), h.data(), n * sizeof(float));
  poison_host(out.data(), n);
  DeviceMatrix<float> m(r, c, s);
  m.fill(0.f);
  m += 1.0f;  // the expression's kernel compiled and loaded before the spin, not while it runs
  s.synchronize();
  spin(s.native(), 300);     // queued work the copies must follow
  m.copy_from_host_async(in.data());
  m += 1.0f;                 // on s, after the upload
  m.copy_to_host_async(out.data());
  if (!under_sanitizer()) {
    // The spin is still running: neither copy waited for it (kernels run serialised and slowed
    // under compute-sanitizer, so this observation is left out there).
    CHECK(cudaStreamQuery(s.native()) == cudaErrorNotReady);
    (void)cudaGetLastError();
  }
  s.synchronize();
  const HostMatrix<float> want = (h.array() + 1.0f).matrix();
  CHECK(std::equal(out.begin(), out.end(), want.data()));
}

TEST_CASE("a download queued on a matrix survives the matrix: its memory is freed after the copy", "[pinned]") {
  const Stream s = Stream::create();
  const Index r = 257, c = 263;
  const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(r, c, 0, 255);
  PinnedBuffer<std::uint8_t> out(static_cast<std::size_t>(r * c));
  poison_host(out.data(), out.size());
  {
    auto m = to_device(h, s);
    spin(s.native(), 50);
    m.copy_to_host_async(out.data());
  }  // destroyed at once: the free is stream-ordered after the copy
  auto reuse = DeviceMatrix<std::uint8_t>::constant(r, c, 7, s);  // may take the same memory, after the copy
  s.synchronize();
  CHECK(std::equal(out.begin(), out.end(), h.data()));
}

TEST_CASE("several streams copy at once, each its own matrices and buffers", "[pinned]") {
  constexpr int kStreams = 4, kRounds = 6;
  const Index r = 1080, c = 1921;
  const std::size_t n = static_cast<std::size_t>(r * c);
  std::vector<Stream> streams;
  std::vector<PinnedBuffer<std::uint8_t>> in, out;
  std::vector<HostMatrix<std::uint8_t>> want;
  for (int k = 0; k < kStreams; ++k) {
    streams.push_back(Stream::create());
    in.emplace_back(n);
    out.emplace_back(n);
  }
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    want.clear();
    for (int k = 0; k < kStreams; ++k) {
      const HostMatrix<std::uint8_t> h = random_matrix<std::uint8_t>(r, c, 0, 254);
      std::memcpy(in[k].data(), h.data(), n);
      poison_host(out[k].data(), n);
      want.push_back((h.array() + std::uint8_t(1)).matrix());
      DeviceMatrix<std::uint8_t> m(r, c, streams[k]);
      m.copy_from_host_async(in[k].data());
      m += std::uint8_t(1);
      m.copy_to_host_async(out[k].data());
    }  // every matrix freed stream-ordered while its copies may still be queued
    for (int k = 0; k < kStreams; ++k) {
      streams[k].synchronize();
      CHECK(std::equal(out[k].begin(), out[k].end(), want[k].data()));
    }
  }
}

TEST_CASE("async copies: a null pointer is std::invalid_argument before anything is queued; empty is a no-op",
          "[pinned][errors]") {
  const Stream s = Stream::create();
  auto m = DeviceMatrix<float>::constant(3, 4, 2.f, s);
  CHECK_THROWS_AS(m.copy_from_host_async(nullptr), std::invalid_argument);
  CHECK_THROWS_AS(m.copy_to_host_async(nullptr), std::invalid_argument);
  CHECK_THROWS_WITH(m.copy_to_host_async(nullptr), contains("null host pointer"));
  CHECK(to_eigen(m) == HostMatrix<float>::Constant(3, 4, 2.f));  // left intact
  DeviceMatrix<float> e;
  CHECK_NOTHROW(e.copy_from_host_async(nullptr));
  CHECK_NOTHROW(e.copy_to_host_async(nullptr));
  DeviceMatrix<float> e2(0, 5, s);
  CHECK_NOTHROW(e2.copy_to_host_async(nullptr));
}
