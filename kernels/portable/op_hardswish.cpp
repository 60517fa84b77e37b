// aten::hardswish.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// out = x * clamp(x + 3, 0, 6) / 6 in self's dtype (Float or Double; out of the same dtype).
// ExecuTorch has no hardswish kernel: export decomposes it into add, clamp, mul and div
// (the Arm partitioner keeps it whole for the NPU; a forced CPU hardswish lands here). This
// computes what that decomposition computes, in its order: t = x + 3, t = clamp(t, 0, 6)
// (a NaN stays NaN), (x * t) / 6 (a true division, as div.out; ATen's eager kernel divides
// too).
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

template <typename T>
T hardswish_of(T x) {
  T t = x + T(3);
  if (!isnan(t)) t = t < T(0) ? T(0) : (T(6) < t ? T(6) : t);
  return x * t / T(6);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_hardswish_out)
rt::Error aten_hardswish_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_hardswish_out);
  Args a("aten::hardswish.out", args, nargs);
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
    for (size_t i = 0; i < self->numel; ++i) y[i] = hardswish_of(x[i]);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
