// aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)
// aten::index_put.out(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False, *,
//                     Tensor(a!) out) -> Tensor(a!)
//
// index: out = self[indices] (kernels/advanced_index.h: integer and mask indices, broadcast,
// numpy's placement of the indexed dims). index_put: out = self with self[indices] = values
// (values broadcast to the indexed shape), or += values with accumulate, element by element in
// order (a repeated index adds every time, as ExecuTorch's loop does). ExecuTorch's checks: out
// and values of self's dtype, at most self.dim() indices, each in range (negative counts from
// the end), masks shaped like the dims they cover.
#include <stdint.h>

#include "kernels/advanced_index.h"
#include "kernels/args.h"
#include "kernels/broadcast.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_index_Tensor_out)
rt::Error aten_index_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_index_Tensor_out);
  Args a("aten::index.Tensor_out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<rt::Tensor*> indices;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_tensor_list(1, "indices", indices));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  AdvancedIndex ix;
  RT_TRY(prepare_index(op, *self, indices, ix));
  RT_TRY(check_out_shape(op, *out, ix.sizes, ix.dim));
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* x = self->data_as<U>();
    U* y = out->data_as<U>();
    int32_t coord[rt::kMaxDims] = {};
    for (size_t j = 0; j < ix.numel; ++j) {
      size_t src = 0;
      RT_TRY(source_offset(op, *self, ix, coord, src));
      y[j] = x[src];
      next_coord(coord, ix.sizes, ix.dim);
    }
    return rt::Error::Ok;
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_index_put_out)
rt::Error aten_index_put_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_index_put_out);
  Args a("aten::index_put.out", args, nargs);
  rt::Tensor *self, *values, *out;
  rt::ArrayRef<rt::Tensor*> indices;
  bool accumulate;
  RT_TRY(a.count(6));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_tensor_list(1, "indices", indices));
  RT_TRY(a.tensor(2, "values", values));
  RT_TRY(a.boolean(3, "accumulate", accumulate));
  RT_TRY(a.tensor(4, "out", out));
  RT_TRY(a.returned(5, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_dtype(op, "self", *self, "values", *values));
  RT_TRY(check_out_shape(op, *out, self->sizes, self->dim));
  AdvancedIndex ix;
  RT_TRY(prepare_index(op, *self, indices, ix));
  RT_CHECK(broadcastable_to(*values, ix.sizes, ix.dim), rt::Error::InvalidArgument,
           "%s: values of shape %s do not broadcast to the indexed shape %s", op, ShapeStr(*values).c_str(),
           ShapeStr(ix.sizes, ix.dim).c_str());
  RT_CHECK(!overlaps(*values, *out), rt::Error::InvalidArgument,
           "%s: values overlap out", op);
  size_t value_strides[rt::kMaxDims];
  broadcast_strides(*values, ix.sizes, ix.dim, value_strides);
  if (out->data != self->data) copy_bytes(out->data, self->data, self->nbytes);
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = values->data_as<T>();
    T* y = out->data_as<T>();
    int32_t coord[rt::kMaxDims] = {};
    for (size_t j = 0; j < ix.numel; ++j) {
      size_t dst = 0;
      RT_TRY(source_offset(op, *self, ix, coord, dst));
      size_t src = 0;
      for (int d = 0; d < ix.dim; ++d) src += static_cast<size_t>(coord[d]) * value_strides[d];
      if (accumulate) {
        y[dst] = Arith<T>::add(y[dst], v[src]);  // in T: integers wrap, Half rounds, Bool ors
      } else {
        y[dst] = v[src];
      }
      next_coord(coord, ix.sizes, ix.dim);
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
