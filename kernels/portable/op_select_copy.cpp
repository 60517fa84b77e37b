// aten::select_copy.int_out(Tensor self, int dim, SymInt index, *, Tensor(a!) out) -> Tensor(a!)
//
// The slice self[..., index, ...] at `dim`, which out holds without that dim (ExecuTorch's
// select_copy_util): self has at least one dim, index in [-size, size) (negative counts
// from the end), out of self's dtype. Elements move by width (any dtype).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_select_copy_int_out)
rt::Error aten_select_copy_int_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_select_copy_int_out);
  Args a("aten::select_copy.int_out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim, index;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.integer(2, "index", index));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(self->dim > 0, rt::Error::InvalidArgument, "%s: self must have at least one dim", op);
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self->dim, d));
  const int64_t size = self->sizes[d];
  RT_CHECK(index >= -size && index < size, rt::Error::InvalidArgument,
           "%s: index %d is out of range for dim %d of size %d", op, static_cast<int>(index), d,
           static_cast<int>(size));
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  size_t in_strides[rt::kMaxDims];
  contiguous_strides(self->sizes, self->dim, in_strides);
  int32_t sizes[rt::kMaxDims];
  size_t strides[rt::kMaxDims];
  int n = 0;
  for (int i = 0; i < self->dim; ++i) {
    if (i == d) continue;
    sizes[n] = self->sizes[i];
    strides[n++] = in_strides[i];
  }
  RT_TRY(check_out_shape(op, *out, sizes, n));
  const size_t base = static_cast<size_t>(index < 0 ? index + size : index) * in_strides[d];
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if (out->numel != 0) gather<U>(out->data_as<U>(), self->data_as<U>() + base, n, sizes, strides);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
