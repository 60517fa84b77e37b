// aten::sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// aten::cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// ExecuTorch's unary_ufunc_realhbbf16_to_floathbf16 with std::sin / std::cos, as exp
// (op_exp.cpp): self of any real or Bool dtype, out floating; sinf/cosf for every self but a
// Double one. Bit-exact with ExecuTorch where both use the same libm (the host: glibc);
// newlib's on the board may differ in the last bit.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

template <uint32_t kSelected, typename Fn>
rt::Error unary_trig(const char* name, rt::Value* const* args, size_t nargs, Fn fn) {
  Args a(name, args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  RT_TRY(check_same_shape(a.op(), "self", *self, "out", *out));
  return apply_unary_to_floating<kSelected>(a.op(), *self, *out, fn);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sin_out)
rt::Error aten_sin_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_trig<KERNEL_DTYPES(aten_sin_out)>("aten::sin.out", args, nargs, [](auto x) { return sin(x); });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_cos_out)
rt::Error aten_cos_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_trig<KERNEL_DTYPES(aten_cos_out)>("aten::cos.out", args, nargs, [](auto x) { return cos(x); });
}
#endif

}  // namespace kernels
