// aten::logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::logical_not.out(Tensor self, *, Tensor(a!) out)
//
// ExecuTorch's rules: every operand (any real, Bool, Half or BFloat16 dtype, mixed) is taken
// as Bool (non-zero, NaN included, is true); the binary forms broadcast; the result is 1 or 0
// in out's dtype (any of the same dtypes; Bool from export).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

enum class Logic { And, Or, Xor };

template <Logic kOp>
struct Logical : ScalarRun<bool, Logical<kOp>> {
  bool operator()(bool x, bool y) const {
    if constexpr (kOp == Logic::And) {
      return x && y;
    } else if constexpr (kOp == Logic::Or) {
      return x || y;
    } else {
      return x != y;
    }
  }
};

struct Not : UnaryScalarRun<bool, Not> {
  bool operator()(bool x) const { return !x; }
};

// (self, other, out, return)
template <uint32_t kSelected, Logic kOp>
rt::Error binary_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *other, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, *self, *other, *out, loop));
  return apply_binary<bool, kSelected>(op, *self, *other, *out, loop, Logical<kOp>{});
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_logical_and_out)
rt::Error aten_logical_and_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return binary_form<KERNEL_DTYPES(aten_logical_and_out), Logic::And>("aten::logical_and.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_logical_or_out)
rt::Error aten_logical_or_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return binary_form<KERNEL_DTYPES(aten_logical_or_out), Logic::Or>("aten::logical_or.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_logical_xor_out)
rt::Error aten_logical_xor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return binary_form<KERNEL_DTYPES(aten_logical_xor_out), Logic::Xor>("aten::logical_xor.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_logical_not_out)
rt::Error aten_logical_not_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::logical_not.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  RT_TRY(check_same_shape(a.op(), "self", *self, "out", *out));
  return apply_unary<bool, KERNEL_DTYPES(aten_logical_not_out)>(a.op(), *self, *out, Not{});
}
#endif

}  // namespace kernels
