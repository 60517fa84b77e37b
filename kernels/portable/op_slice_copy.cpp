// aten::slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1, *,
//                             Tensor(a!) out) -> Tensor(a!)
//
// Python slicing along one dim: negative start/end count from the end, both
// clamp to [0, size], an empty range gives 0 elements, step must be > 0.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_slice_copy_Tensor_out)
rt::Error aten_slice_copy_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_slice_copy_Tensor_out);
  Args a("aten::slice_copy.Tensor_out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim, step;
  Optional<int64_t> start, end;
  RT_TRY(a.count(7));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.optional_integer(2, "start", start));
  RT_TRY(a.optional_integer(3, "end", end));
  RT_TRY(a.integer(4, "step", step));
  RT_TRY(a.tensor(5, "out", out));
  RT_TRY(a.returned(6, out));
  const char* op = a.op();
  RT_CHECK(self->dim > 0, rt::Error::InvalidArgument, "%s: self must have at least one dim", op);
  RT_CHECK(step > 0, rt::Error::InvalidArgument, "%s: step %d must be positive", op, static_cast<int>(step));
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self->dim, d));
  const int64_t size = self->sizes[d];
  int64_t lo = start.present ? start.value : 0;
  int64_t hi = end.present ? end.value : size;
  if (lo < 0) lo += size;
  if (hi < 0) hi += size;
  lo = lo < 0 ? 0 : (lo > size ? size : lo);
  hi = hi < lo ? lo : (hi > size ? size : hi);
  const int64_t len = (hi - lo + step - 1) / step;

  int32_t sizes[rt::kMaxDims];
  size_t strides[rt::kMaxDims];
  for (int i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  contiguous_strides(self->sizes, self->dim, strides);
  sizes[d] = static_cast<int32_t>(len);
  RT_TRY(check_out_shape(op, *out, sizes, self->dim));
  const size_t base = static_cast<size_t>(lo) * strides[d];
  strides[d] *= static_cast<size_t>(step);
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if (out->numel != 0) gather<U>(out->data_as<U>(), self->data_as<U>() + base, self->dim, sizes, strides);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
