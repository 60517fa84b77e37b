// dim_order_ops::_to_dim_order_copy.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//                                       Tensor(a!) out) -> Tensor(a!)
//
// What `tensor.to(dtype)` becomes in an ExecuTorch program (also the casts
// export inserts for Python scalars: a 0-d Long constant -> Float). Each
// element is static_cast to out's dtype; float -> integer truncates toward
// zero (out-of-range values, undefined in C++, saturate; see convert.h).
// Half and BFloat16 convert through float both ways (reduced_float.h): Float ->
// Half rounds to nearest even, Double or Long -> Half rounds to float first.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_dim_order_ops__to_dim_order_copy_out)
rt::Error dim_order_ops__to_dim_order_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(dim_order_ops__to_dim_order_copy_out);
  Args a("dim_order_ops::_to_dim_order_copy.out", args, nargs);
  rt::Tensor *self, *out;
  bool non_blocking;
  Optional<rt::ArrayRef<int64_t>> dim_order;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.boolean(1, "non_blocking", non_blocking));
  RT_TRY(a.optional_int_list(2, "dim_order", dim_order));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  (void)non_blocking;  // copies are synchronous here
  const char* op = a.op();
  RT_TRY(check_contiguous_dim_order(op, dim_order.present ? &dim_order.value : nullptr, self->dim));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    return dispatch<kRealHBBF16Dtypes, kSelected>(op, "out", out->dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* x = self->data_as<In>();
      Out* y = out->data_as<Out>();
      if constexpr (std::is_same_v<In, Out>) {
        copy_bytes(y, x, self->nbytes);
      } else {
        for (size_t i = 0; i < self->numel; ++i) y[i] = convert<Out>(x[i]);
      }
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
