// Catch2 2.x (Debian 12) or 3.x (Ubuntu 24.04), whichever the build found, and the few
// spellings that differ between them.
#pragma once
#if DEVMAT_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

#include <string>

/// Reports the running test case as skipped, with a reason, and leaves it. Catch2 3.3 and later
/// have SKIP (the test shows as skipped; a run where every test case skipped exits with 4).
/// Catch2 2 and 3.0-3.2 have no skipped state: the best they offer is a warning that carries
/// the reason into the output, then a return, so the test case shows as passed with that
/// warning. Only for use in a TEST_CASE's body (it returns from the enclosing function).
#if defined(SKIP)
#define DEVMAT_SKIP(msg) SKIP(msg)
#else
#define DEVMAT_SKIP(msg) \
  do {                   \
    WARN(msg);           \
    return;              \
  } while (false)
#endif

namespace devmat::test {

/// A matcher for strings that hold `part`, for CHECK_THAT and CHECK_THROWS_WITH
/// (Catch2 3's ContainsSubstring, Catch2 2's Contains).
inline auto contains(const std::string& part) {
#if DEVMAT_CATCH2_MAJOR >= 3
  return Catch::Matchers::ContainsSubstring(part);
#else
  return Catch::Matchers::Contains(part);
#endif
}

}  // namespace devmat::test
