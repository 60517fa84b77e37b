// aten::exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// ExecuTorch's unary_ufunc_realhbbf16_to_floathbf16 with std::exp: self of any real or Bool
// dtype, out floating; expf for every self but a Double one (exp). Bit-exact with ExecuTorch
// where both use the same libm (the host: glibc); newlib's expf on the board may differ in
// the last bit.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_exp_out)
rt::Error aten_exp_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::exp.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  RT_TRY(check_same_shape(a.op(), "self", *self, "out", *out));
  return apply_unary_to_floating<KERNEL_DTYPES(aten_exp_out)>(a.op(), *self, *out, [](auto x) { return exp(x); });
}
#endif

}  // namespace kernels
