// aten::expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out) -> Tensor(a!)
//
// Broadcast self to `size`: new dims are added in front, -1 keeps a dim, a
// size-1 dim may stretch; every other size must match.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/broadcast.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_expand_copy_out)
rt::Error aten_expand_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_expand_copy_out);
  Args a("aten::expand_copy.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> size;
  bool implicit;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "size", size));
  RT_TRY(a.boolean(2, "implicit", implicit));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  (void)implicit;  // only tracing metadata
  const char* op = a.op();
  const int dim = static_cast<int>(size.size);
  RT_CHECK(dim >= self->dim && dim <= rt::kMaxDims, rt::Error::InvalidArgument,
           "%s: cannot expand %s to %d dims", op, ShapeStr(*self).c_str(), dim);
  int32_t sizes[rt::kMaxDims];
  for (int i = 0; i < dim; ++i) {
    const int d = i - (dim - self->dim);  // dim of self, < 0 for a new leading dim
    const int64_t s = size[i];
    RT_CHECK((s >= 0 && s <= 0x7fffffff) || (s == -1 && d >= 0), rt::Error::InvalidArgument, "%s: size[%d] = %d",
             op, i, static_cast<int>(s));
    sizes[i] = static_cast<int32_t>(s == -1 ? self->sizes[d] : s);
  }
  RT_CHECK(broadcastable_to(*self, sizes, dim), rt::Error::ShapeMismatch, "%s: cannot expand %s to %s", op,
           ShapeStr(*self).c_str(), ShapeStr(sizes, dim).c_str());
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_out_shape(op, *out, sizes, dim));
  size_t strides[rt::kMaxDims];
  broadcast_strides(*self, sizes, dim, strides);
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather<U>(out->data_as<U>(), self->data_as<U>(), dim, sizes, strides);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
