// The emulation's stand-in for <cuda_runtime.h> (test_expr_emulation.cpp puts this directory
// first on the include path): the device headers get emu_cuda.hpp instead of the toolkit.
#pragma once
#include "emu_cuda.hpp"
