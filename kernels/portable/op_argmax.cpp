// aten::argmax.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
//
// The index of the largest element along `dim` (None: of all elements, as a flat index),
// as Long. ExecuTorch's rules: the first maximum wins, a NaN counts as the largest (the first
// NaN wins); self is a real dtype (no Bool) and must not be empty along dim (an empty self
// without dim is refused too: ExecuTorch aborts there).
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return isnan(v);
  } else {
    return false;
  }
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_argmax_out)
rt::Error aten_argmax_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_argmax_out);
  Args a("aten::argmax.out", args, nargs);
  rt::Tensor *self, *out;
  Optional<int64_t> dim;
  bool keepdim;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_integer(1, "dim", dim));
  RT_TRY(a.boolean(2, "keepdim", keepdim));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(out->dtype == ScalarType::Long, rt::Error::DtypeMismatch, "%s: out must be Long, got %s", op,
           rt::scalar_type_name(out->dtype));
  int d = 0;
  if (dim.present) RT_TRY(normalize_dim(op, "dim", dim.value, self->dim, d, true));
  int32_t sizes[rt::kMaxDims];
  int n = 0;
  for (int i = 0; i < self->dim; ++i) {
    if (!dim.present || i == d) {
      if (keepdim) sizes[n++] = 1;
    } else {
      sizes[n++] = self->sizes[i];
    }
  }
  RT_TRY(check_out_shape(op, *out, sizes, n));
  // The reduced run: all elements (dim None or a 0-d self), or dim d.
  const DimSplit s = (!dim.present || self->dim == 0) ? DimSplit{1, self->numel, 1} : split_at(*self, d);
  RT_CHECK(!dim.present || self->dim == 0 || self->sizes[d] > 0, rt::Error::InvalidArgument,
           "%s: self is empty along dim %d", op, d);
  RT_CHECK(dim.present || self->numel > 0, rt::Error::InvalidArgument, "%s: self is empty", op);
  return dispatch<kRealDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self->data_as<T>();
    int64_t* y = out->data_as<int64_t>();
    for (size_t o = 0; o < s.outer; ++o) {
      for (size_t i = 0; i < s.inner; ++i) {
        const T* run = x + o * s.size * s.inner + i;
        T best = run[0];
        int64_t at = 0;
        for (size_t k = 1; k < s.size; ++k) {
          const T v = run[k * s.inner];
          if (!is_nan(best) && !(v <= best)) {
            best = v;
            at = static_cast<int64_t>(k);
          }
        }
        y[o * s.inner + i] = at;
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
