// aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// aten::silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// sigmoid: out = 1 / (1 + exp(-x)), computed in self's dtype when it is floating and in
// Float otherwise (integer and Bool inputs); out must be floating.
// silu: out = x * sigmoid(x), Float or Double, out of self's dtype. ExecuTorch has no silu
// kernel (export decomposes silu into sigmoid.out and mul.out; the Arm partitioner keeps it
// whole for the NPU, and a forced CPU silu lands here): this computes what that
// decomposition computes, rounding for rounding.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

inline float sigmoid_of(float x) { return 1.0f / (1.0f + expf(-x)); }
inline double sigmoid_of(double x) { return 1.0 / (1.0 + exp(-x)); }

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sigmoid_out)
rt::Error aten_sigmoid_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return unary_to_floating_kernel<KERNEL_DTYPES(aten_sigmoid_out)>("aten::sigmoid.out", args, nargs,
                                                                   [](auto x) { return sigmoid_of(x); });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_silu_out)
rt::Error aten_silu_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_silu_out);
  Args a("aten::silu.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch<kFloatDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self->data_as<T>();
    T* y = out->data_as<T>();
    for (size_t i = 0; i < self->numel; ++i) y[i] = x[i] * sigmoid_of(x[i]);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
