// Element conversion and PyTorch's type promotion, as ExecuTorch's portable
// kernels apply them (promoteTypes, canCast, promote_type_with_scalar).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#include "kernels/args.h"
#include "kernels/dtype.h"

namespace kernels {

// static_cast between element types, defined everywhere: float -> integer
// truncates toward zero, saturates to int64 (NaN -> 0) and then wraps to the
// target width like integer -> integer casts do. (C++ leaves out-of-range
// float -> int undefined; in range this is exactly static_cast.)
// Half and BFloat16 convert through float, both ways (as c10's types do: a
// Double -> Half conversion rounds to float first).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_reduced_float_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_reduced_float_v<To>) {
    return To(convert<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>) {
    int64_t i;
    if (!(v == v)) {
      i = 0;
    } else if (v >= static_cast<From>(9.2233720368547758e18)) {
      i = INT64_MAX;
    } else if (v < static_cast<From>(-9.2233720368547758e18)) {
      i = INT64_MIN;
    } else {
      i = static_cast<int64_t>(v);
    }
    return static_cast<To>(static_cast<std::make_unsigned_t<To>>(static_cast<uint64_t>(i)));
  } else {
    return static_cast<To>(v);
  }
}

// PyTorch's promoteTypes over the dtypes these kernels compute in. Returns
// false for pairs without a rule here (e.g. unsigned 16/32/64-bit).
inline bool promote_types(ScalarType a, ScalarType b, ScalarType& out) {
  if (a == b) {
    out = a;
    return true;
  }
  if (a == ScalarType::Bool || b == ScalarType::Bool) {
    out = a == ScalarType::Bool ? b : a;
    return true;
  }
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa || fb) {
    if (fa && fb) {
      if (a == ScalarType::Double || b == ScalarType::Double) {
        out = ScalarType::Double;
      } else if (a == ScalarType::Float || b == ScalarType::Float) {
        out = ScalarType::Float;
      } else {
        out = ScalarType::Float;  // Half with BFloat16
      }
    } else {
      out = fa ? a : b;
    }
    return true;
  }
  if (!is_integral(a) || !is_integral(b)) return false;
  // Signed widths in order; Byte (uint8) with a signed type needs one more bit.
  auto rank = [](ScalarType t) {
    switch (t) {
      case ScalarType::Char:
        return 1;
      case ScalarType::Short:
        return 2;
      case ScalarType::Int:
        return 3;
      default:
        return 4;  // Long
    }
  };
  if (a == ScalarType::Byte || b == ScalarType::Byte) {
    const ScalarType s = a == ScalarType::Byte ? b : a;
    out = s == ScalarType::Char ? ScalarType::Short : s;
    return true;
  }
  out = rank(a) >= rank(b) ? a : b;
  return true;
}

// ExecuTorch's canCast: no floating -> integral, nothing but Bool -> Bool.
constexpr bool can_cast(ScalarType from, ScalarType to) {
  return !(is_floating(from) && (is_integral(to) || to == ScalarType::Bool)) &&
         !(from != ScalarType::Bool && to == ScalarType::Bool);
}

// The dtype an operation computes in: reduced floats compute in Float.
constexpr ScalarType compute_type(ScalarType common) {
  return (common == ScalarType::Half || common == ScalarType::BFloat16) ? ScalarType::Float : common;
}

// The dtype a Scalar carries for promotion: Double, Long or Bool.
inline ScalarType scalar_dtype(const Scalar& s) {
  return s.is_floating() ? ScalarType::Double : s.is_bool() ? ScalarType::Bool : ScalarType::Long;
}

// ExecuTorch's promote_type_with_scalar: a tensor keeps its dtype unless the
// scalar is of a higher category (float scalar -> Float; int scalar with a
// Bool tensor -> Long).
inline ScalarType promote_with_scalar(ScalarType t, const Scalar& s) {
  if (is_floating(t)) return t;
  if (s.is_floating()) return ScalarType::Float;
  if (t == ScalarType::Bool && !s.is_bool()) return ScalarType::Long;
  return t;
}

// ExecuTorch's check_alpha_type: alpha must cast to the common dtype (an
// integral alpha is also fine for Bool).
inline bool alpha_fits(const Scalar& alpha, ScalarType common) {
  const ScalarType at = scalar_dtype(alpha);
  return can_cast(at, common) || (common == ScalarType::Bool && !alpha.is_floating());
}

// A Scalar as compute type C; false when it does not fit (a float for an
// integral C, or an integer out of C's range), as ExecuTorch's extract_scalar.
template <typename C>
inline bool scalar_to(const Scalar& s, C& out) {
  if constexpr (std::is_floating_point_v<C>) {
    out = static_cast<C>(s.to_double());
    return true;
  } else if constexpr (std::is_same_v<C, bool>) {
    if (s.is_floating()) return false;
    out = s.to_int() != 0;
    return true;
  } else {
    if (s.is_floating()) return false;
    const int64_t v = s.to_int();
    if (v < static_cast<int64_t>(std::numeric_limits<C>::min()) ||
        v > static_cast<int64_t>(std::numeric_limits<C>::max())) {
      return false;
    }
    out = static_cast<C>(v);
    return true;
  }
}

// A Scalar converted to C without a range check (the tensor-side operand of
// add.Scalar etc.: ExecuTorch's scalar_to).
template <typename C>
inline C scalar_cast(const Scalar& s) {
  if (s.is_floating()) return convert<C>(s.d);
  if (s.is_bool()) return static_cast<C>(s.b);
  return convert<C>(s.i);
}

// ExecuTorch's check_overflow_scalar_cast<C> (hardtanh's bounds, scalar_tensor): the Scalar
// as C, false when it overflows C (c10::overflows). Bool never overflows; a float overflows
// an integer C when NaN, infinite or out of range (in range it truncates toward zero), and
// a float C only when finite and out of range; an integer may wrap into an unsigned C down
// to -max (-5 -> 251 for uint8), as two's complement.
template <typename C>
inline bool scalar_cast_checked(const Scalar& v, C& out) {
  if constexpr (std::is_same_v<C, bool>) {
    out = v.is_floating() ? v.d != 0.0 : v.is_bool() ? v.b : v.i != 0;
    return true;
  } else if constexpr (is_reduced_float_v<C>) {
    // c10::overflows<Half / BFloat16>: beyond +-max (compared as double; an integer too),
    // infinities and NaN fit. The value then converts through float.
    const double max = static_cast<double>(static_cast<float>(C::max()));
    if (v.is_bool()) {
      out = C(static_cast<float>(v.b));
      return true;
    }
    const double d = v.is_floating() ? v.d : static_cast<double>(v.i);
    if (d - d == 0.0 && (d < -max || d > max)) return false;
    out = v.is_floating() ? C(static_cast<float>(v.d)) : C(static_cast<float>(v.i));
    return true;
  } else if constexpr (std::is_floating_point_v<C>) {
    if (v.is_floating()) {
      const double d = v.d;
      if (d == d && d - d == 0.0 &&  // finite
          (d < static_cast<double>(std::numeric_limits<C>::lowest()) ||
           d > static_cast<double>(std::numeric_limits<C>::max()))) {
        return false;
      }
      out = static_cast<C>(d);
    } else {
      out = v.is_bool() ? static_cast<C>(v.b) : static_cast<C>(v.i);
    }
    return true;
  } else {
    if (v.is_bool()) {
      out = static_cast<C>(v.b);
      return true;
    }
    if (v.is_floating()) {
      const double d = v.d;
      // NaN and the infinities fail both comparisons or one.
      if (!(d >= static_cast<double>(std::numeric_limits<C>::lowest()) &&
            d <= static_cast<double>(std::numeric_limits<C>::max()))) {
        return false;
      }
      out = convert<C>(d);
      return true;
    }
    const int64_t i = v.i;
    const int64_t lo = static_cast<int64_t>(std::numeric_limits<C>::lowest());
    const int64_t hi = static_cast<int64_t>(std::numeric_limits<C>::max());
    const bool ok = std::is_signed_v<C> ? (i >= lo && i <= hi) : (i <= hi && i >= -hi);
    if (!ok) return false;
    out = static_cast<C>(static_cast<uint64_t>(i));
    return true;
  }
}

// Element access through a dtype chosen at run time, for the mixed-dtype
// paths: load_fn<C>(t) reads element i of a tensor of dtype t as C.
template <typename C>
using LoadFn = C (*)(const void* data, size_t i);
template <typename C>
using StoreFn = void (*)(void* data, size_t i, C v);

template <typename C, typename T>
C load_as(const void* data, size_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    // A Bool tensor's byte may hold any value when it comes from outside; reading it as
    // `bool` would be undefined behaviour unless it is 0 or 1.
    return convert<C>(static_cast<const uint8_t*>(data)[i] != 0);
  } else {
    return convert<C>(static_cast<const T*>(data)[i]);
  }
}
template <typename C, typename T>
void store_as(void* data, size_t i, C v) {
  static_cast<T*>(data)[i] = convert<T>(v);
}

// nullptr when `t` is not in kSelected (or not a real/bool/Half/BFloat16 dtype).
template <typename C, uint32_t kSelected>
LoadFn<C> load_fn(ScalarType t) {
  LoadFn<C> fn = nullptr;
  visit<kRealHBBF16Dtypes & kSelected>(t, [&](auto tag) { fn = &load_as<C, typename decltype(tag)::type>; });
  return fn;
}
template <typename C, uint32_t kSelected>
StoreFn<C> store_fn(ScalarType t) {
  StoreFn<C> fn = nullptr;
  visit<kRealHBBF16Dtypes & kSelected>(t, [&](auto tag) { fn = &store_as<C, typename decltype(tag)::type>; });
  return fn;
}

}  // namespace kernels
