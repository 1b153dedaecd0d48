// Host tests: error types and messages, and shape checks that throw before any device work.
#include "support/util.hpp"

#include <string>

using namespace devmat;

TEST_CASE("cuda_error keeps the code and names the call, the place and CUDA's message") {
  bool threw = false;
  try {
    DEVMAT_CUDA_TRY(cudaErrorInvalidValue);
  } catch (const cuda_error& e) {
    threw = true;
    CHECK(e.code() == cudaErrorInvalidValue);
    const std::string w = e.what();
    CHECK_THAT(w, test::contains("cudaErrorInvalidValue"));
    CHECK_THAT(w, test::contains("test_errors.cpp:"));
    CHECK_THAT(w, test::contains(cudaGetErrorString(cudaErrorInvalidValue)));
  }
  CHECK(threw);
}

TEST_CASE("the error hierarchy: devmat::error for ours, std::bad_alloc for out_of_memory") {
  STATIC_REQUIRE(std::is_base_of_v<devmat::error, cuda_error>);
  STATIC_REQUIRE(std::is_base_of_v<devmat::error, shape_error>);
  STATIC_REQUIRE(std::is_base_of_v<devmat::error, io_error>);
  STATIC_REQUIRE(std::is_base_of_v<std::bad_alloc, out_of_memory>);
  out_of_memory oom(3u << 30, 1u << 30, 4u << 30);
  const std::string w = oom.what();
  CHECK(w.find("3221225472 bytes") != std::string::npos);
  CHECK(w.find("1024 MiB") != std::string::npos);
  CHECK(oom.requested() == (3u << 30));
}

TEST_CASE("shape errors name the operation and both shapes, before any device is touched") {
  DeviceMatrix<float> a(0, 3), b(0, 4);  // empty: no device needed
  CHECK_THROWS_AS(a + b, shape_error);
  CHECK_THROWS_WITH(a + b, test::contains("operator+"));
  CHECK_THROWS_WITH(a + b, test::contains("0x3"));
  CHECK_THROWS_WITH(a + b, test::contains("0x4"));
  CHECK_THROWS_AS(a -= b, shape_error);
  CHECK_THROWS_AS(a.cwise_product(b), shape_error);
  CHECK_THROWS_AS(DeviceMatrix<float>(-1, 3), shape_error);
  CHECK_THROWS_AS(DeviceMatrix<double>::from_vector({1.0, 2.0}, 0, 3), shape_error);
  // operands stay intact
  CHECK(a.rows() == 0);
  CHECK(a.cols() == 3);
  CHECK(b.cols() == 4);
}

TEST_CASE("expressions check shapes and arguments when they are built, before any device is touched") {
  // Empty operands need no device, so these run everywhere (CI included).
  DeviceMatrix<float> a(0, 3), col(0, 1), row(1, 0), b(0, 4);
  DeviceMatrix<std::int32_t> i(0, 3);
  const auto e = a - col * 2.0f;  // broadcasts: 0x3 with 0x1
  CHECK(e.rows() == 0);
  CHECK(e.cols() == 3);
  CHECK(DeviceMatrix<float>(e).empty());
  const auto outer = row + col;  // 1x0 with 0x1: 0x0
  CHECK(outer.rows() == 0);
  CHECK(outer.cols() == 0);
  CHECK_THROWS_AS(a + b, shape_error);  // 3 against 4 columns: no broadcast
  CHECK_THROWS_WITH(a - b, test::contains("0x3") && test::contains("0x4") && test::contains("broadcast"));
  CHECK_THROWS_AS(select(a > 0.0f, a, b), shape_error);
  CHECK_THROWS_AS(i / 0, std::invalid_argument);  // integer division by the scalar 0
  CHECK_THROWS_AS(i /= 0, std::invalid_argument);
  CHECK_THROWS_AS(a += b, shape_error);
  CHECK(a.cols() == 3);  // operands intact
  CHECK(b.cols() == 4);
}

TEST_CASE("empty matrices need no device") {
  DeviceMatrix<std::uint8_t> e;
  CHECK(e.empty());
  CHECK(e.rows() == 0);
  CHECK(e.data() == nullptr);
  DeviceMatrix<std::int32_t> z(0, 7);
  auto moved = std::move(z);
  CHECK(moved.cols() == 7);
  CHECK(z.cols() == 0);
  auto copy = moved;  // deep copy of nothing
  CHECK(copy.cols() == 7);
  CHECK(moved.to_vector().empty());
}

TEST_CASE("min, max and mean of nothing are shape errors naming the operation, before any device is touched") {
  const DeviceMatrix<float> e(0, 5);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const shape_error& x) {
      return std::string(x.what());
    }
    return std::string("no shape_error");
  };
  CHECK(message([&] { (void)e.min(); }) == "devmat: min: the matrix is empty (0x5); its min is undefined");
  CHECK(message([&] { (void)e.max_async(); }) == "devmat: max: the matrix is empty (0x5); its max is undefined");
  CHECK(message([&] { (void)e.view().mean(); }) == "devmat: mean: the matrix is empty (0x5); its mean is undefined");
  CHECK(message([&] { (void)(e + e).min(); }) == "devmat: min: the expression is empty (0x5); its min is undefined");
  CHECK(message([&] { (void)arg_max(e); }) ==
        "devmat: arg_max: the expression is empty (0x5); its arg_max is undefined");
}
