// aten::unfold_copy.out(Tensor self, int dimension, int size, int step, *, Tensor(a!) out)
//     -> Tensor(a!)
//
// Every window of `size` elements along `dimension`, `step` apart: out has self's shape with
// that dim replaced by the window count, (n - size) / step + 1, and a last dim of `size`;
// out[.., j, .., l] = self[.., j * step + l, ..]. ExecuTorch's checks: 0 <= size <= n, step > 0.
// Elements move by width (every dtype); out has self's dtype (a 0-d self is refused: ExecuTorch
// reads the size of a dim it does not have).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_unfold_copy_out)
rt::Error aten_unfold_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_unfold_copy_out);
  Args a("aten::unfold_copy.out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dimension, size, step;
  RT_TRY(a.count(6));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dimension", dimension));
  RT_TRY(a.integer(2, "size", size));
  RT_TRY(a.integer(3, "step", step));
  RT_TRY(a.tensor(4, "out", out));
  RT_TRY(a.returned(5, out));
  const char* op = a.op();
  RT_CHECK(self->dim > 0, rt::Error::InvalidArgument, "%s: self is 0-d", op);
  RT_CHECK(self->dim < rt::kMaxDims, rt::Error::InvalidArgument, "%s: the result would have %d dims (max %d)", op,
           self->dim + 1, rt::kMaxDims);
  int d = 0;
  RT_TRY(normalize_dim(op, "dimension", dimension, self->dim, d, false));
  const int64_t n = self->sizes[d];
  RT_CHECK(size >= 0 && size <= n, rt::Error::InvalidArgument, "%s: size %d is outside [0, %d] (dim %d)", op,
           static_cast<int>(size), static_cast<int>(n), d);
  RT_CHECK(step > 0, rt::Error::InvalidArgument, "%s: step is %d but must be > 0", op, static_cast<int>(step));
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  int32_t sizes[rt::kMaxDims];
  for (int i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  const size_t windows = static_cast<size_t>((n - size) / step + 1);
  sizes[d] = static_cast<int32_t>(windows);
  sizes[self->dim] = static_cast<int32_t>(size);
  RT_TRY(check_out_shape(op, *out, sizes, self->dim + 1));
  const DimSplit s = split_at(*self, d);
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* x = self->data_as<U>();
    U* y = out->data_as<U>();
    for (size_t o = 0; o < s.outer; ++o) {
      const U* src = x + o * s.size * s.inner;
      for (size_t j = 0; j < windows; ++j) {
        const U* window = src + j * static_cast<size_t>(step) * s.inner;
        for (size_t k = 0; k < s.inner; ++k) {
          for (size_t l = 0; l < static_cast<size_t>(size); ++l) *y++ = window[k + l * s.inner];
        }
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
