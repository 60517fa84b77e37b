// aten::sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// aten::cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// ExecuTorch's unary_ufunc_realhbbf16_to_floathbf16 with std::sin / std::cos, as exp
// (op_exp.cpp): self of any real or Bool dtype, out floating; sinf/cosf for every self but a
// Double one. Bit-exact with ExecuTorch where both use the same libm (the host: glibc);
// newlib's on the board may differ in the last bit.
#include <math.h>
#include <stdint.h>

#include "kernels/elementwise.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sin_out)
rt::Error aten_sin_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_to_floating_kernel<KERNEL_DTYPES(aten_sin_out)>("aten::sin.out", args, nargs,
                                                               [](auto x) { return sin(x); });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_cos_out)
rt::Error aten_cos_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_to_floating_kernel<KERNEL_DTYPES(aten_cos_out)>("aten::cos.out", args, nargs,
                                                               [](auto x) { return cos(x); });
}
#endif

}  // namespace kernels
