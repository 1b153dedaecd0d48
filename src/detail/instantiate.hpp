// Lists of element types for explicit instantiation.
#pragma once

#include <cstdint>

// Every DeviceMatrix<T> (the four user types and the two integer-sum types).
#define DEVMAT_FOR_EACH_TYPE(X) \
  X(float) X(double) X(std::int32_t) X(std::uint8_t) X(std::int64_t) X(std::uint64_t)
