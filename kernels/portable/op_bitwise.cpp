// aten::bitwise_{and,or,xor}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::bitwise_{and,or,xor}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
// aten::bitwise_not.out(Tensor self, *, Tensor(a!) out)
// aten::bitwise_{left,right}_shift.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::bitwise_{left,right}_shift.Tensor_Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//
// ExecuTorch's rules: the operands are integral or Bool; the Tensor forms broadcast and
// compute in promoteTypes(self, other), the Scalar forms in promote_with_scalar(self, other)
// (a Bool tensor with an integer is Long; an integer is cast to self's dtype unchecked);
// that dtype must cast to out (canCast; out any real, Bool, Half or BFloat16). Bool is
// and/or/xor of truth values. bitwise_not: out has self's dtype; ~x, logical not for Bool.
// Shifts compute as C++ does for the dtype (operands narrower than int32 widened to it, the
// result cast back: ExecuTorch's `a << b`, `a >> b`); a shift count C++ leaves undefined
// (negative, or the widened width or more) gives what PyTorch gives: 0 to the left, the
// sign to the right. Bool shifts its truth values (x << y is x; x >> y is x and not y).
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

constexpr uint32_t kIntBoolDtypes = kIntDtypes | bit(ScalarType::Bool);

enum class Bits { And, Or, Xor, Left, Right };

// x << y and x >> y in C's width after C++'s promotion, defined for every count (above).
template <typename C, Bits kOp>
C shift(C x, C y) {
  if constexpr (std::is_same_v<C, bool>) {
    return kOp == Bits::Left ? x : (x && !y);
  } else {
    using W = std::conditional_t<(sizeof(C) < sizeof(int32_t)), int32_t, C>;
    using U = std::make_unsigned_t<W>;
    constexpr int64_t kBits = 8 * static_cast<int64_t>(sizeof(W));
    const int64_t count = static_cast<int64_t>(y);
    const W wide = static_cast<W>(x);
    if (count < 0 || count >= kBits) {
      return kOp == Bits::Left ? C(0) : static_cast<C>(wide < 0 ? W(-1) : W(0));
    }
    if constexpr (kOp == Bits::Left) {
      return static_cast<C>(static_cast<W>(static_cast<U>(wide) << count));  // no signed overflow
    } else {
      return static_cast<C>(wide >> count);
    }
  }
}

template <typename C, Bits kOp>
struct Bitwise : ScalarRun<C, Bitwise<C, kOp>> {
  C operator()(C x, C y) const {
    if constexpr (kOp == Bits::And) {
      return static_cast<C>(x & y);
    } else if constexpr (kOp == Bits::Or) {
      return static_cast<C>(x | y);
    } else if constexpr (kOp == Bits::Xor) {
      return static_cast<C>(x ^ y);
    } else {
      return shift<C, kOp>(x, y);
    }
  }
};

template <typename C>
struct Invert : UnaryScalarRun<C, Invert<C>> {
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;
    } else {
      return static_cast<C>(~x);
    }
  }
};

template <uint32_t kSelected, Bits kOp>
rt::Error apply(const char* op, const rt::Tensor& self, const rt::Tensor& other, rt::Tensor& out,
                ScalarType compute, const Scalar* scalar) {
  return dispatch<kIntBoolDtypes, with_promoted_dtypes(kSelected)>(op, "the computation", compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    // (of a dtype the build may not have selected)
    const ScalarTensor<C> b(scalar != nullptr ? scalar_cast<C>(*scalar) : C(0));
    const rt::Tensor& rhs = scalar != nullptr ? b.t : other;
    StridedLoop<3> loop;
    RT_TRY(binary_loop(op, self, rhs, out, loop));
    return apply_binary<C, kSelected | bit(dtype_of<C>())>(op, self, rhs, out, loop, Bitwise<C, kOp>{});
  });
}

// (self, other: Tensor, out, return)
template <uint32_t kSelected, Bits kOp>
rt::Error tensor_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *other, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  ScalarType common, compute;
  RT_TRY(binary_compute_type(op, *self, *other, *out, common, compute));
  return apply<kSelected, kOp>(op, *self, *other, *out, compute, nullptr);
}

// (self, other: Scalar, out, return)
template <uint32_t kSelected, Bits kOp>
rt::Error scalar_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *out;
  Scalar other;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const ScalarType common = promote_with_scalar(self->dtype, other);
  RT_CHECK(can_cast(common, out->dtype), rt::Error::DtypeMismatch, "%s: result dtype %s cannot be cast to out %s",
           op, rt::scalar_type_name(common), rt::scalar_type_name(out->dtype));
  return apply<kSelected, kOp>(op, *self, *self, *out, compute_type(common), &other);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_and_Tensor_out)
rt::Error aten_bitwise_and_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_and_Tensor_out);
  return tensor_form<kSelected, Bits::And>("aten::bitwise_and.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_and_Scalar_out)
rt::Error aten_bitwise_and_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_and_Scalar_out);
  return scalar_form<kSelected, Bits::And>("aten::bitwise_and.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_or_Tensor_out)
rt::Error aten_bitwise_or_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_or_Tensor_out);
  return tensor_form<kSelected, Bits::Or>("aten::bitwise_or.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_or_Scalar_out)
rt::Error aten_bitwise_or_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_or_Scalar_out);
  return scalar_form<kSelected, Bits::Or>("aten::bitwise_or.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_xor_Tensor_out)
rt::Error aten_bitwise_xor_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_xor_Tensor_out);
  return tensor_form<kSelected, Bits::Xor>("aten::bitwise_xor.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_xor_Scalar_out)
rt::Error aten_bitwise_xor_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_xor_Scalar_out);
  return scalar_form<kSelected, Bits::Xor>("aten::bitwise_xor.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_left_shift_Tensor_out)
rt::Error aten_bitwise_left_shift_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_left_shift_Tensor_out);
  return tensor_form<kSelected, Bits::Left>("aten::bitwise_left_shift.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_left_shift_Tensor_Scalar_out)
rt::Error aten_bitwise_left_shift_Tensor_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_left_shift_Tensor_Scalar_out);
  return scalar_form<kSelected, Bits::Left>("aten::bitwise_left_shift.Tensor_Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_right_shift_Tensor_out)
rt::Error aten_bitwise_right_shift_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_right_shift_Tensor_out);
  return tensor_form<kSelected, Bits::Right>("aten::bitwise_right_shift.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_right_shift_Tensor_Scalar_out)
rt::Error aten_bitwise_right_shift_Tensor_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bitwise_right_shift_Tensor_Scalar_out);
  return scalar_form<kSelected, Bits::Right>("aten::bitwise_right_shift.Tensor_Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bitwise_not_out)
rt::Error aten_bitwise_not_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::bitwise_not.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch<kIntBoolDtypes, KERNEL_DTYPES(aten_bitwise_not_out)>(op, "self", self->dtype, [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_unary<C, KERNEL_DTYPES(aten_bitwise_not_out)>(op, *self, *out, Invert<C>{});
  });
}
#endif

}  // namespace kernels
