// devmat: a GPU matrix as a C++ value type. The umbrella header (plain C++).
#pragma once

#include <devmat/device_matrix.hpp>
#include <devmat/error.hpp>
#include <devmat/gemm.hpp>
#include <devmat/image.hpp>
#include <devmat/memory.hpp>
#include <devmat/stream.hpp>
