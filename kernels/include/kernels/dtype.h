// Dtypes in kernels: C++ types per ScalarType, dtype sets, and the dispatch
// that compiles a kernel body only for the dtypes this build selected.
//
// A kernel names two masks: the dtypes it supports at all (a constant of the
// kernel) and the dtypes this build selected (KERNEL_DTYPES(fn), from the
// generated kernel_select.h; everything on the host). dispatch<>() switches
// over a run-time dtype and instantiates the body only where both masks hold:
//   - supported and selected    -> body(Type<T>{})
//   - supported, not selected   -> NotSupported "built without dtype X"
//   - not supported             -> DtypeMismatch
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/reduced_float.h"
#include "kernels/select.h"
#include "rt/error.h"
#include "rt/scalar_type.h"

// True when this build compiles only the kernels/dtypes a program uses. A
// kernel function that is not selected is then left out of its source file
// entirely (its registration is not generated either):
//   #if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bmm_out)
#if __has_include("kernel_select.h")
#define KERNEL_BUILD_ALL 0
#else
#define KERNEL_BUILD_ALL 1
#endif

#define KERNEL_DTYPE_BIT_(fn, dtype) (KERNEL_SELECTED(fn, dtype) ? ::rt::dtype_bit(::rt::ScalarType::dtype) : 0u)

// The dtypes this build selected for kernel function `fn` (a uint32_t mask).
#define KERNEL_DTYPES(fn)                                                                             \
  (KERNEL_DTYPE_BIT_(fn, Byte) | KERNEL_DTYPE_BIT_(fn, Char) | KERNEL_DTYPE_BIT_(fn, Short) |          \
   KERNEL_DTYPE_BIT_(fn, Int) | KERNEL_DTYPE_BIT_(fn, Long) | KERNEL_DTYPE_BIT_(fn, Half) |            \
   KERNEL_DTYPE_BIT_(fn, Float) | KERNEL_DTYPE_BIT_(fn, Double) | KERNEL_DTYPE_BIT_(fn, Bool) |         \
   KERNEL_DTYPE_BIT_(fn, BFloat16) | KERNEL_DTYPE_BIT_(fn, UInt16) | KERNEL_DTYPE_BIT_(fn, UInt32) |   \
   KERNEL_DTYPE_BIT_(fn, UInt64))

namespace kernels {

using rt::ScalarType;

// A type carried as a value, so generic lambdas can name it: [](auto t) {
// using T = typename decltype(t)::type; }.
template <typename T>
struct Type {
  using type = T;
};

constexpr uint32_t bit(ScalarType t) { return rt::dtype_bit(t); }

constexpr uint32_t kIntDtypes = bit(ScalarType::Byte) | bit(ScalarType::Char) | bit(ScalarType::Short) |
                                bit(ScalarType::Int) | bit(ScalarType::Long);
constexpr uint32_t kFloatDtypes = bit(ScalarType::Float) | bit(ScalarType::Double);
constexpr uint32_t kRealDtypes = kIntDtypes | kFloatDtypes;
constexpr uint32_t kRealBoolDtypes = kRealDtypes | bit(ScalarType::Bool);
// The 16-bit floats (reduced_float.h), and ExecuTorch's sets with them (its
// ET_SWITCH_FLOATHBF16 / REALHBF16 / REALHBBF16).
constexpr uint32_t kReducedDtypes = bit(ScalarType::Half) | bit(ScalarType::BFloat16);
constexpr uint32_t kFloatHDtypes = kFloatDtypes | bit(ScalarType::Half);
constexpr uint32_t kFloatHBF16Dtypes = kFloatDtypes | kReducedDtypes;
constexpr uint32_t kRealHBF16Dtypes = kRealDtypes | kReducedDtypes;
constexpr uint32_t kRealHBBF16Dtypes = kRealBoolDtypes | kReducedDtypes;
// Quantized storage types of quantize/dequantize.
constexpr uint32_t kQuantDtypes =
    bit(ScalarType::Byte) | bit(ScalarType::Char) | bit(ScalarType::Short) | bit(ScalarType::Int);

constexpr bool in_mask(uint32_t mask, ScalarType t) { return (mask & bit(t)) != 0u; }

constexpr bool is_floating(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Half ||
         t == ScalarType::BFloat16;
}
// Integral, excluding Bool.
constexpr bool is_integral(ScalarType t) { return in_mask(kIntDtypes, t); }

template <typename T>
constexpr ScalarType dtype_of();
template <>
constexpr ScalarType dtype_of<bool>() { return ScalarType::Bool; }
template <>
constexpr ScalarType dtype_of<uint8_t>() { return ScalarType::Byte; }
template <>
constexpr ScalarType dtype_of<int8_t>() { return ScalarType::Char; }
template <>
constexpr ScalarType dtype_of<int16_t>() { return ScalarType::Short; }
template <>
constexpr ScalarType dtype_of<int32_t>() { return ScalarType::Int; }
template <>
constexpr ScalarType dtype_of<int64_t>() { return ScalarType::Long; }
template <>
constexpr ScalarType dtype_of<float>() { return ScalarType::Float; }
template <>
constexpr ScalarType dtype_of<double>() { return ScalarType::Double; }
template <>
constexpr ScalarType dtype_of<Half>() { return ScalarType::Half; }
template <>
constexpr ScalarType dtype_of<BFloat16>() { return ScalarType::BFloat16; }

// The selection mask of a computation: a kernel that reads or writes Half or
// BFloat16 computes in Float (compute_type), which its build must then compile
// even when no tensor of the program is Float.
constexpr uint32_t with_compute_dtypes(uint32_t selected) {
  return (selected & kReducedDtypes) != 0u ? (selected | bit(ScalarType::Float)) : selected;
}

// Failure for a dtype outside `supported` (DtypeMismatch) or supported but
// compiled out of this build (NotSupported).
inline rt::Error dtype_unavailable(uint32_t supported, const char* op, const char* what, ScalarType t) {
  if (in_mask(supported, t)) {
    return rt::fail(rt::Error::NotSupported, "%s: this firmware was built without dtype %s (for %s)", op,
                    rt::scalar_type_name(t), what);
  }
  return rt::fail(rt::Error::DtypeMismatch, "%s: %s has dtype %s, which this operator does not take", op, what,
                  rt::scalar_type_name(t));
}

// Call body(Type<T>{}) for the C++ type of `t` if t is in kOn; false otherwise.
template <uint32_t kOn, typename Body>
bool visit(ScalarType t, Body&& body) {
#define KERNELS_DTYPE_CASE_(NAME, CTYPE)            \
  case ScalarType::NAME:                            \
    if constexpr (in_mask(kOn, ScalarType::NAME)) { \
      body(Type<CTYPE>{});                          \
      return true;                                  \
    }                                               \
    break;
  switch (t) {
    KERNELS_DTYPE_CASE_(Bool, bool)
    KERNELS_DTYPE_CASE_(Byte, uint8_t)
    KERNELS_DTYPE_CASE_(Char, int8_t)
    KERNELS_DTYPE_CASE_(Short, int16_t)
    KERNELS_DTYPE_CASE_(Int, int32_t)
    KERNELS_DTYPE_CASE_(Long, int64_t)
    KERNELS_DTYPE_CASE_(Float, float)
    KERNELS_DTYPE_CASE_(Double, double)
    KERNELS_DTYPE_CASE_(Half, Half)
    KERNELS_DTYPE_CASE_(BFloat16, BFloat16)
    default:
      break;
  }
#undef KERNELS_DTYPE_CASE_
  return false;
}

// Run body(Type<T>{}) -> rt::Error for the C++ type of `t` (see the top of this file).
template <uint32_t kSupported, uint32_t kSelected, typename Body>
rt::Error dispatch(const char* op, const char* what, ScalarType t, Body&& body) {
  rt::Error result = rt::Error::Ok;
  if (visit<kSupported & kSelected>(t, [&](auto tag) { result = body(tag); })) {
    return result;
  }
  return dtype_unavailable(kSupported, op, what, t);
}

// dispatch() over the dtype an operation computes in (compute_type(common)),
// selected when the build selected it or a Half/BFloat16 that computes in it.
template <uint32_t kSupported, uint32_t kSelected, typename Body>
rt::Error dispatch_compute(const char* op, ScalarType compute, Body&& body) {
  return dispatch<kSupported, with_compute_dtypes(kSelected)>(op, "the computation", compute, body);
}

// Data-movement kernels do not care what an element means, only its width:
// run body(Type<U>{}) with U the unsigned integer of the element's size. Only
// the widths of selected dtypes are compiled.
template <uint32_t kSelected, typename Body>
rt::Error dispatch_width(const char* op, const char* what, ScalarType t, Body&& body) {
  constexpr uint32_t k1 = bit(ScalarType::Byte) | bit(ScalarType::Char) | bit(ScalarType::Bool);
  constexpr uint32_t k2 =
      bit(ScalarType::Short) | bit(ScalarType::Half) | bit(ScalarType::BFloat16) | bit(ScalarType::UInt16);
  constexpr uint32_t k4 = bit(ScalarType::Int) | bit(ScalarType::Float) | bit(ScalarType::UInt32);
  constexpr uint32_t k8 = bit(ScalarType::Long) | bit(ScalarType::Double) | bit(ScalarType::UInt64);
  constexpr uint32_t kAll = k1 | k2 | k4 | k8;
  if (!in_mask(kSelected & kAll, t)) {
    return dtype_unavailable(kAll, op, what, t);
  }
  if constexpr ((kSelected & k1) != 0u) {
    if (in_mask(k1, t)) return body(Type<uint8_t>{});
  }
  if constexpr ((kSelected & k2) != 0u) {
    if (in_mask(k2, t)) return body(Type<uint16_t>{});
  }
  if constexpr ((kSelected & k4) != 0u) {
    if (in_mask(k4, t)) return body(Type<uint32_t>{});
  }
  if constexpr ((kSelected & k8) != 0u) {
    if (in_mask(k8, t)) return body(Type<uint64_t>{});
  }
  return rt::fail(rt::Error::Internal, "%s: no width for dtype %s", op, rt::scalar_type_name(t));
}

// Byte-moving kernels (split, cat, view copies) need no per-dtype code at all;
// they still refuse a dtype the build did not select, like every kernel.
template <uint32_t kSelected>
rt::Error check_selected(const char* op, const char* what, ScalarType t) {
  constexpr uint32_t kAll =
      kRealHBBF16Dtypes | bit(ScalarType::UInt16) | bit(ScalarType::UInt32) | bit(ScalarType::UInt64);
  return in_mask(kSelected & kAll, t) ? rt::Error::Ok : dtype_unavailable(kAll, op, what, t);
}

}  // namespace kernels
