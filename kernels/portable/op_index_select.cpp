// aten::index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)
//
// out = self with `dim` replaced by the entries index picks, in index's order (repeats
// allowed). ExecuTorch's checks: index is Long or Int with at most one dim (one value for a
// 0-d self), each entry in [0, size) (no negative indices), self non-empty along dim, out of
// self's dtype. Elements move by width (any dtype).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_index_select_out)
rt::Error aten_index_select_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_index_select_out);
  constexpr uint32_t kIndexDtypes = bit(ScalarType::Int) | bit(ScalarType::Long);
  Args a("aten::index_select.out", args, nargs);
  rt::Tensor *self, *index, *out;
  int64_t dim;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.tensor(2, "index", index));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self->dim, d, true));
  const size_t size = self->dim == 0 ? 1 : static_cast<size_t>(self->sizes[d]);
  RT_CHECK(size > 0, rt::Error::InvalidArgument, "%s: self has no entries along dim %d", op, d);
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_CHECK(index->dim <= 1, rt::Error::InvalidArgument, "%s: index must have at most one dim, has %d", op,
           static_cast<int>(index->dim));
  RT_CHECK(!(index->dim > 0 && self->dim == 0 && index->numel != 1), rt::Error::InvalidArgument,
           "%s: an index into a 0-d self must have one value", op);
  int32_t sizes[rt::kMaxDims];
  for (int i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  if (self->dim > 0) sizes[d] = static_cast<int32_t>(index->numel);
  RT_TRY(check_out_shape(op, *out, sizes, self->dim));
  return dispatch<kIndexDtypes, kSelected>(op, "index", index->dtype, [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    const I* idx = index->data_as<I>();
    for (size_t j = 0; j < index->numel; ++j) {
      RT_CHECK(idx[j] >= 0 && static_cast<uint64_t>(idx[j]) < size, rt::Error::InvalidArgument,
               "%s: index[%u] = %d is out of range [0, %u)", op, static_cast<unsigned>(j), static_cast<int>(idx[j]),
               static_cast<unsigned>(size));
    }
    return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
      using U = typename decltype(tag)::type;
      const U* x = self->data_as<U>();
      U* y = out->data_as<U>();
      if (self->dim == 0) {
        y[0] = x[0];
        return rt::Error::Ok;
      }
      const DimSplit s = split_at(*self, d);
      const size_t n = index->numel;
      for (size_t o = 0; o < s.outer; ++o) {
        const U* src = x + o * s.size * s.inner;
        U* dst = y + o * n * s.inner;
        if (s.inner == 1) {
          for (size_t j = 0; j < n; ++j) dst[j] = src[static_cast<size_t>(idx[j])];
        } else {
          for (size_t j = 0; j < n; ++j) {
            copy_bytes(dst + j * s.inner, src + static_cast<size_t>(idx[j]) * s.inner, s.inner * sizeof(U));
          }
        }
      }
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
