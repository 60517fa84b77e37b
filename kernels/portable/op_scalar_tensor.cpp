// aten::scalar_tensor.out(Scalar s, *, Tensor(a!) out) -> Tensor(a!)
//
// A 0-d tensor holding s in out's dtype: what export makes of a Python number where a tensor
// is expected (torch.where(c, x, 0.0) becomes scalar_tensor + where.self_out). As in
// ExecuTorch, s must not overflow out's dtype (check_overflow_scalar_cast, see convert.h).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_scalar_tensor_out)
rt::Error aten_scalar_tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_scalar_tensor_out);
  Args a("aten::scalar_tensor.out", args, nargs);
  Scalar s;
  rt::Tensor* out;
  RT_TRY(a.count(3));
  RT_TRY(a.scalar(0, "s", s));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  const char* op = a.op();
  RT_TRY(check_out_shape(op, *out, nullptr, 0));
  return dispatch<kRealBoolDtypes, kSelected>(op, "out", out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    RT_CHECK(scalar_cast_checked<T>(s, v), rt::Error::InvalidArgument, "%s: s overflows dtype %s", op,
             rt::scalar_type_name(out->dtype));
    out->data_as<T>()[0] = v;
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
