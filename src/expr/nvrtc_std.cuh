// What the device headers compiled at run time (kernels/common.cuh, reduce_block.cuh,
// byte_lanes.cuh, cast.cuh, expr_ops.cuh, expr.cuh) take from the standard library, for NVRTC,
// which has no standard headers: the engine (src/expr/engine.cpp) hands this text to NVRTC under
// the names <cstddef>, <cstdint>, <cstring>, <limits>, <type_traits> and <cuda_runtime.h>. Only
// what those headers use, for the types devmat has; the host's LP64 sizes (long is 64 bits).
// NVRTC has no __builtin_huge_val: infinities and NaN come from their bits (not usable in
// constant expressions, which nothing here needs).
#ifndef DEVMAT_NVRTC_STD_CUH
#define DEVMAT_NVRTC_STD_CUH

namespace std {

// <cstddef>, <cstdint>
typedef decltype(sizeof(0)) size_t;
typedef decltype(static_cast<int*>(nullptr) - static_cast<int*>(nullptr)) ptrdiff_t;
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
static_assert(sizeof(int64_t) == 8 && sizeof(uintptr_t) == sizeof(void*), "nvrtc_std: an LP64 target");

// <cstring>
using ::memcpy;

// <type_traits>
template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;

template <bool C, class A, class B> struct conditional { typedef A type; };
template <class A, class B> struct conditional<false, A, B> { typedef B type; };
template <bool C, class A, class B> using conditional_t = typename conditional<C, A, B>::type;

template <bool C, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool C, class T = void> using enable_if_t = typename enable_if<C, T>::type;

template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;

template <class T> struct is_integral_base : false_type {};
template <> struct is_integral_base<bool> : true_type {};
template <> struct is_integral_base<char> : true_type {};
template <> struct is_integral_base<signed char> : true_type {};
template <> struct is_integral_base<unsigned char> : true_type {};
template <> struct is_integral_base<short> : true_type {};
template <> struct is_integral_base<unsigned short> : true_type {};
template <> struct is_integral_base<int> : true_type {};
template <> struct is_integral_base<unsigned> : true_type {};
template <> struct is_integral_base<long> : true_type {};
template <> struct is_integral_base<unsigned long> : true_type {};
template <> struct is_integral_base<long long> : true_type {};
template <> struct is_integral_base<unsigned long long> : true_type {};
template <class T> struct is_integral : is_integral_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct is_floating_point_base : false_type {};
template <> struct is_floating_point_base<float> : true_type {};
template <> struct is_floating_point_base<double> : true_type {};
template <> struct is_floating_point_base<long double> : true_type {};
template <class T> struct is_floating_point : is_floating_point_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;

template <class T> inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T, bool = is_arithmetic_v<T>> struct is_signed_base : false_type {};
template <class T> struct is_signed_base<T, true> : integral_constant<bool, (T(-1) < T(0))> {};
template <class T> struct is_signed : is_signed_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_signed_v = is_signed<T>::value;
template <class T> struct is_unsigned : integral_constant<bool, is_integral_v<T> && !is_signed_v<T>> {};
template <class T> inline constexpr bool is_unsigned_v = is_unsigned<T>::value;

// <limits>
template <class T> struct numeric_limits;
template <class T, T kLowest, T kMax>
struct integer_limits {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = true;
  static constexpr bool is_signed = T(-1) < T(0);
  __host__ __device__ static constexpr T lowest() { return kLowest; }
  __host__ __device__ static constexpr T min() { return kLowest; }
  __host__ __device__ static constexpr T max() { return kMax; }
};
template <> struct numeric_limits<bool> : integer_limits<bool, false, true> {};
template <> struct numeric_limits<char> : integer_limits<char, char(-128), char(127)> {};
template <> struct numeric_limits<signed char> : integer_limits<signed char, -128, 127> {};
template <> struct numeric_limits<unsigned char> : integer_limits<unsigned char, 0, 255> {};
template <> struct numeric_limits<short> : integer_limits<short, -32768, 32767> {};
template <> struct numeric_limits<unsigned short> : integer_limits<unsigned short, 0, 65535> {};
template <> struct numeric_limits<int> : integer_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<unsigned> : integer_limits<unsigned, 0u, 4294967295u> {};
template <> struct numeric_limits<long> : integer_limits<long, -9223372036854775807L - 1, 9223372036854775807L> {};
template <> struct numeric_limits<unsigned long> : integer_limits<unsigned long, 0ul, 18446744073709551615ul> {};
template <>
struct numeric_limits<long long> : integer_limits<long long, -9223372036854775807LL - 1, 9223372036854775807LL> {};
template <>
struct numeric_limits<unsigned long long> : integer_limits<unsigned long long, 0ull, 18446744073709551615ull> {};

template <>
struct numeric_limits<float> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  __host__ __device__ static constexpr float lowest() { return -3.40282346638528859811704183484516925e+38f; }
  __host__ __device__ static constexpr float min() { return 1.17549435082228750796873653722224568e-38f; }
  __host__ __device__ static constexpr float max() { return 3.40282346638528859811704183484516925e+38f; }
  __host__ __device__ static constexpr float infinity() { return __int_as_float(0x7f800000); }
  __host__ __device__ static constexpr float quiet_NaN() { return __int_as_float(0x7fffffff); }
};
template <>
struct numeric_limits<double> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_signed = true;
  __host__ __device__ static constexpr double lowest() { return -1.79769313486231570814527423731704357e+308; }
  __host__ __device__ static constexpr double min() { return 2.22507385850720138309023271733240406e-308; }
  __host__ __device__ static constexpr double max() { return 1.79769313486231570814527423731704357e+308; }
  __host__ __device__ static constexpr double infinity() { return __longlong_as_double(0x7ff0000000000000ll); }
  __host__ __device__ static constexpr double quiet_NaN() { return __longlong_as_double(0x7fffffffffffffffll); }
};
template <class T> struct numeric_limits<const T> : numeric_limits<T> {};

}  // namespace std

#endif  // DEVMAT_NVRTC_STD_CUH
