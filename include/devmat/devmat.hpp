// devmat: a GPU matrix as a C++ value type. The umbrella header (plain C++).
/// @file
/// The umbrella header: everything but `<devmat/eigen.hpp>` (which needs Eigen).
///
/// @mainpage devmat API reference
///
/// devmat gives C++ programs a GPU matrix as a value type: link libdevmat, include plain C++
/// headers (a host compiler alone reads them) and write `C = A * B`, `A + B`,
/// `A.transpose()`, `A.sum()`. Everything is in namespace devmat.
///
/// - devmat::DeviceMatrix: the matrix, its factories, copies, element-wise operations,
///   transpose and reductions (`<devmat/device_matrix.hpp>`).
/// - devmat::MatrixView and devmat::wrap: windows of matrices and of foreign device memory
///   (`<devmat/matrix_view.hpp>`).
/// - devmat::gemm, `operator*` and devmat::FloatMath: matrix products (`<devmat/gemm.hpp>`).
/// - devmat::Stream: the CUDA stream each matrix carries (`<devmat/stream.hpp>`).
/// - devmat::load_gray, devmat::save_image, devmat::gaussian_blur, ...: images
///   (`<devmat/image.hpp>`).
/// - devmat::to_device, devmat::to_eigen: Eigen conversions (`<devmat/eigen.hpp>`).
/// - devmat::pool_stats, devmat::trim_pool: the memory pool (`<devmat/memory.hpp>`).
/// - devmat::PinnedBuffer: page-locked host memory for copies that overlap with GPU work
///   (DeviceMatrix::copy_from_host_async, copy_to_host_async; `<devmat/pinned.hpp>`).
/// - devmat::error, devmat::cuda_error, devmat::shape_error, devmat::io_error,
///   devmat::out_of_memory and DEVMAT_CUDA_TRY (`<devmat/error.hpp>`).
///
/// Every operation runs on the stream of its left (first) operand and does not block the
/// host, except the calls that return host data (copy_to_host, to_vector, sum, min, max,
/// mean). Errors are thrown before anything is launched, leaving the operands intact. The
/// README has the stream and memory model in full.
#pragma once

#include <devmat/device_matrix.hpp>
#include <devmat/error.hpp>
#include <devmat/gemm.hpp>
#include <devmat/image.hpp>
#include <devmat/matrix_view.hpp>
#include <devmat/memory.hpp>
#include <devmat/pinned.hpp>
#include <devmat/stream.hpp>
