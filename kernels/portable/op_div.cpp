// aten::div.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out)
// aten::div.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// aten::div.Scalar_mode_out(Tensor self, Scalar other, *, str? rounding_mode, Tensor(a!) out)
//
// ExecuTorch's rules:
//   div.out           true division, broadcasting. Computes in the floating operand's dtype
//                     (promoteTypes when both are floating), Float when neither is; out may
//                     be any floating dtype.
//   div.out_mode      rounding_mode "trunc" or "floor" (None: div.out). Computes in
//                     promoteTypes(self, other) (not Bool), castable to out. Integers:
//                     trunc is C++ division, floor rounds toward -inf (Python's //); a zero
//                     divisor is refused (ExecuTorch fails after computing, here nothing is
//                     written). Floats: trunc(a / b); floor is Python's floor division
//                     ((a - fmod(a, b)) / b, corrected by one), and a zero divisor gives
//                     +-inf with a's sign.
//   div.Scalar_out    computes in self's dtype when floating, else Float; that must be
//                     out's dtype.
//   div.Scalar_mode_out  promote_type_with_scalar(self, other) (not Bool), castable to out.
// Where ExecuTorch's integer arithmetic is undefined, results are defined here: MIN / -1
// wraps to MIN (x86 traps), and a Long "trunc" quotient goes through double as ExecuTorch's
// std::trunc does (exact up to 2^53; beyond that it rounds like ExecuTorch's). There is no
// Helium path: MVE has no vector float division.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

enum class Rounding { None, Trunc, Floor };

// The quotient a / b of integers (b != 0), wrapping for MIN / -1.
template <typename C>
C int_quotient(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return static_cast<C>(0u - static_cast<std::make_unsigned_t<C>>(a));
  }
  return static_cast<C>(a / b);
}

template <typename C>
C trunc_divide(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return trunc(a / b);
  } else {
    const C q = int_quotient(a, b);
    // ExecuTorch: value = std::trunc(value), an integer through double.
    if constexpr (sizeof(C) == 8) return convert<C>(static_cast<double>(q));
    return q;
  }
}

// ExecuTorch's utils::floor_divide.
template <typename C>
C floor_divide(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (b == C(0)) return signbit(a) ? C(-INFINITY) : C(INFINITY);
    const C mod = fmod(a, b);
    const C div = (a - mod) / b;
    if (mod != C(0) && signbit(b) != signbit(mod)) return div - C(1);
    return div;
  } else {
    const C q = int_quotient(a, b);
    if constexpr (std::is_unsigned_v<C>) {
      return q;
    } else {
      if ((a < C(0)) == (b < C(0))) return q;
      const C rem = b == C(-1) ? C(0) : static_cast<C>(a % b);
      return rem != C(0) ? static_cast<C>(q - C(1)) : q;
    }
  }
}

template <typename C>
struct Divide : ScalarRun<C, Divide<C>> {
  C operator()(C x, C y) const { return x / y; }
};

template <typename C>
struct DivideRounded : ScalarRun<C, DivideRounded<C>> {
  bool trunc_mode;
  C operator()(C x, C y) const { return trunc_mode ? trunc_divide(x, y) : floor_divide(x, y); }
};

// By a scalar divisor.
template <typename C>
struct DivideBy : UnaryScalarRun<C, DivideBy<C>> {
  C divisor;
  C operator()(C x) const { return x / divisor; }
};

template <typename C>
struct DivideRoundedBy : UnaryScalarRun<C, DivideRoundedBy<C>> {
  C divisor;
  bool trunc_mode;
  C operator()(C x) const { return trunc_mode ? trunc_divide(x, divisor) : floor_divide(x, divisor); }
};

inline rt::Error rounding_mode(const char* op, const Optional<rt::ArrayRef<char>>& mode, Rounding& out) {
  out = Rounding::None;
  if (!mode.present) return rt::Error::Ok;
  const rt::ArrayRef<char>& s = mode.value;
  auto is = [&](const char* text) { return s.size == strlen(text) && memcmp(s.data, text, s.size) == 0; };
  RT_CHECK(is("trunc") || is("floor"), rt::Error::InvalidArgument,
           "%s: rounding_mode must be \"trunc\" or \"floor\"", op);
  out = is("trunc") ? Rounding::Trunc : Rounding::Floor;
  return rt::Error::Ok;
}

template <uint32_t kSelected>
rt::Error div_tensor(const char* op, const rt::Tensor& a, const rt::Tensor& b, rt::Tensor& out) {
  ScalarType common = ScalarType::Float;
  if (is_floating(a.dtype) && is_floating(b.dtype)) {
    RT_CHECK(promote_types(a.dtype, b.dtype, common), rt::Error::Internal, "%s: no promotion", op);
  } else if (is_floating(a.dtype)) {
    common = a.dtype;
  } else if (is_floating(b.dtype)) {
    common = b.dtype;
  }
  RT_CHECK(is_floating(out.dtype), rt::Error::DtypeMismatch, "%s: out dtype %s is not floating", op,
           rt::scalar_type_name(out.dtype));
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, a, b, out, loop));
  return dispatch_compute<kFloatDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_binary<C, kSelected>(op, a, b, out, loop, Divide<C>{});
  });
}

// A rounded division's common dtype: not Bool, castable to out.
inline rt::Error check_rounded_common(const char* op, ScalarType common, const rt::Tensor& out) {
  RT_CHECK(common != ScalarType::Bool, rt::Error::DtypeMismatch, "%s: rounded division of Bool is not supported",
           op);
  RT_CHECK(can_cast(common, out.dtype), rt::Error::DtypeMismatch, "%s: result dtype %s cannot be cast to out %s",
           op, rt::scalar_type_name(common), rt::scalar_type_name(out.dtype));
  return rt::Error::Ok;
}

template <uint32_t kSelected>
rt::Error div_tensor_rounded(const char* op, const rt::Tensor& a, const rt::Tensor& b, Rounding mode,
                             rt::Tensor& out) {
  ScalarType common = a.dtype;
  RT_CHECK(promote_types(a.dtype, b.dtype, common), rt::Error::DtypeMismatch, "%s: cannot promote %s with %s", op,
           rt::scalar_type_name(a.dtype), rt::scalar_type_name(b.dtype));
  RT_TRY(check_rounded_common(op, common, out));
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, a, b, out, loop));
  return dispatch_compute<kRealDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    if constexpr (!std::is_floating_point_v<C>) {
      // Every element of other takes part unless out is empty.
      const LoadFn<C> load = load_fn<C, kSelected>(b.dtype);
      if (load == nullptr) return dtype_unavailable(kRealBoolDtypes, op, "other", b.dtype);
      for (size_t i = 0; out.numel != 0 && i < b.numel; ++i) {
        RT_CHECK(load(b.data, i) != C(0), rt::Error::InvalidArgument, "%s: integer division by zero", op);
      }
    }
    return apply_binary<C, kSelected>(op, a, b, out, loop, DivideRounded<C>{{}, mode == Rounding::Trunc});
  });
}

template <uint32_t kSelected>
rt::Error div_scalar(const char* op, const rt::Tensor& a, const Scalar& b, rt::Tensor& out) {
  const ScalarType common = is_floating(a.dtype) ? a.dtype : ScalarType::Float;
  RT_CHECK(common == out.dtype, rt::Error::DtypeMismatch, "%s: result dtype %s != out dtype %s", op,
           rt::scalar_type_name(common), rt::scalar_type_name(out.dtype));
  RT_TRY(check_same_shape(op, "self", a, "out", out));
  return dispatch_compute<kFloatDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_unary<C, kSelected>(op, a, out, DivideBy<C>{{}, scalar_cast<C>(b)});
  });
}

template <uint32_t kSelected>
rt::Error div_scalar_rounded(const char* op, const rt::Tensor& a, const Scalar& b, Rounding mode, rt::Tensor& out) {
  const ScalarType common = promote_with_scalar(a.dtype, b);
  RT_TRY(check_rounded_common(op, common, out));
  RT_CHECK(!(is_integral(common) && b.to_double() == 0.0), rt::Error::InvalidArgument,
           "%s: integer division by zero", op);
  RT_TRY(check_same_shape(op, "self", a, "out", out));
  return dispatch_compute<kRealDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    const C divisor = scalar_cast<C>(b);
    // A divisor that wraps to 0 in C (256 for Char): undefined in ExecuTorch, refused here.
    RT_CHECK(std::is_floating_point_v<C> || divisor != C(0), rt::Error::InvalidArgument,
             "%s: the divisor is 0 in dtype %s", op, rt::scalar_type_name(common));
    return apply_unary<C, kSelected>(op, a, out, DivideRoundedBy<C>{{}, divisor, mode == Rounding::Trunc});
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_div_out)
rt::Error aten_div_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::div.out", args, nargs);
  rt::Tensor *self, *other, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  return div_tensor<KERNEL_DTYPES(aten_div_out)>(a.op(), *self, *other, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_div_out_mode)
rt::Error aten_div_out_mode(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_div_out_mode);
  Args a("aten::div.out_mode", args, nargs);
  rt::Tensor *self, *other, *out;
  Optional<rt::ArrayRef<char>> mode_arg;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.optional_string(2, "rounding_mode", mode_arg));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  Rounding mode;
  RT_TRY(rounding_mode(a.op(), mode_arg, mode));
  if (mode == Rounding::None) return div_tensor<kSelected>(a.op(), *self, *other, *out);
  return div_tensor_rounded<kSelected>(a.op(), *self, *other, mode, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_div_Scalar_out)
rt::Error aten_div_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::div.Scalar_out", args, nargs);
  rt::Tensor *self, *out;
  Scalar other;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  return div_scalar<KERNEL_DTYPES(aten_div_Scalar_out)>(a.op(), *self, other, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_div_Scalar_mode_out)
rt::Error aten_div_Scalar_mode_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_div_Scalar_mode_out);
  Args a("aten::div.Scalar_mode_out", args, nargs);
  rt::Tensor *self, *out;
  Scalar other;
  Optional<rt::ArrayRef<char>> mode_arg;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.optional_string(2, "rounding_mode", mode_arg));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  Rounding mode;
  RT_TRY(rounding_mode(a.op(), mode_arg, mode));
  if (mode == Rounding::None) return div_scalar<kSelected>(a.op(), *self, other, *out);
  return div_scalar_rounded<kSelected>(a.op(), *self, other, mode, *out);
}
#endif

}  // namespace kernels
