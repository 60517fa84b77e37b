// aten::exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// ExecuTorch's unary_ufunc_realhbbf16_to_floathbf16 with std::exp: self of any real or Bool
// dtype, out floating; expf for every self but a Double one (exp). Bit-exact with ExecuTorch
// where both use the same libm (the host: glibc); newlib's expf on the board may differ in
// the last bit.
#include <math.h>
#include <stdint.h>

#include "kernels/elementwise.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_exp_out)
rt::Error aten_exp_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_to_floating_kernel<KERNEL_DTYPES(aten_exp_out)>("aten::exp.out", args, nargs,
                                                               [](auto x) { return exp(x); });
}
#endif

}  // namespace kernels
