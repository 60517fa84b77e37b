// aten::gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False,
//                  Tensor(a!) out) -> Tensor(a!)
//
// out[i..] = self[i.. with dim replaced by index[i..]]; out has index's shape and self's dtype.
// ExecuTorch's checks: index is Long (an Int index is refused, as ExecuTorch refuses it) with
// self's rank, no larger than self off `dim`, each entry in [0, size of dim). Elements move by
// width (any dtype).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_gather_out)
rt::Error aten_gather_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_gather_out);
  constexpr uint32_t kIndexDtypes = bit(ScalarType::Long);
  Args a("aten::gather.out", args, nargs);
  rt::Tensor *self, *index, *out;
  int64_t dim;
  bool sparse_grad;
  RT_TRY(a.count(6));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.tensor(2, "index", index));
  RT_TRY(a.boolean(3, "sparse_grad", sparse_grad));
  RT_TRY(a.tensor(4, "out", out));
  RT_TRY(a.returned(5, out));
  const char* op = a.op();
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self->dim, d, true));
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_CHECK(index->dim == self->dim || (index->dim <= 1 && self->dim <= 1), rt::Error::InvalidArgument,
           "%s: index has %d dims, self %d", op, static_cast<int>(index->dim), static_cast<int>(self->dim));
  for (int i = 0; i < index->dim && index->dim == self->dim; ++i) {
    RT_CHECK(i == d || index->sizes[i] <= self->sizes[i], rt::Error::InvalidArgument,
             "%s: index size %d at dim %d is larger than self's %d", op, static_cast<int>(index->sizes[i]), i,
             static_cast<int>(self->sizes[i]));
  }
  RT_TRY(check_out_shape(op, *out, index->sizes, index->dim));
  const int64_t size = self->dim == 0 ? 1 : self->sizes[d];
  size_t self_strides[rt::kMaxDims];
  contiguous_strides(self->sizes, self->dim, self_strides);
  const int rank = index->dim;
  return dispatch<kIndexDtypes, kSelected>(op, "index", index->dtype, [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    const I* idx = index->data_as<I>();
    for (size_t j = 0; j < index->numel; ++j) {
      RT_CHECK(idx[j] >= 0 && static_cast<int64_t>(idx[j]) < size, rt::Error::InvalidArgument,
               "%s: index[%u] = %d is out of range [0, %d)", op, static_cast<unsigned>(j),
               static_cast<int>(idx[j]), static_cast<int>(size));
    }
    return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* x = self->data_as<U>();
      U* y = out->data_as<U>();
      int32_t at[rt::kMaxDims] = {};  // the multi-index of out (and index) element j
      for (size_t j = 0; j < index->numel; ++j) {
        size_t src = 0;
        for (int i = 0; i < rank && self->dim > 0; ++i) {
          const size_t coord = i == d ? static_cast<size_t>(idx[j]) : static_cast<size_t>(at[i]);
          src += coord * self_strides[i];
        }
        y[j] = x[src];
        for (int i = rank - 1; i >= 0; --i) {
          if (++at[i] < index->sizes[i]) break;
          at[i] = 0;
        }
      }
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
