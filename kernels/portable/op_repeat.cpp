// aten::repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) -> Tensor(a!)
//
// out = self tiled repeats[d] times along each dim; self takes leading 1s up to
// len(repeats) dims, which may not be fewer than self's. ExecuTorch's checks: repeats >= 0,
// out of self's dtype and the tiled shape. Elements move by width (any dtype).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_repeat_out)
rt::Error aten_repeat_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_repeat_out);
  Args a("aten::repeat.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> repeats;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "repeats", repeats));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  const int rank = static_cast<int>(repeats.size);
  RT_CHECK(rank >= self->dim && rank <= rt::kMaxDims, rt::Error::InvalidArgument,
           "%s: %d repeats for a %d-d self (at least as many, at most %d)", op, rank,
           static_cast<int>(self->dim), rt::kMaxDims);
  int32_t in_sizes[rt::kMaxDims];
  int32_t out_sizes[rt::kMaxDims];
  const int pad = rank - self->dim;
  for (int i = 0; i < rank; ++i) {
    RT_CHECK(repeats[i] >= 0 && repeats[i] <= INT32_MAX, rt::Error::InvalidArgument,
             "%s: repeats[%d] = %d is negative or too large", op, i, static_cast<int>(repeats[i]));
    in_sizes[i] = i < pad ? 1 : self->sizes[i - pad];
    const int64_t n = static_cast<int64_t>(in_sizes[i]) * repeats[i];
    RT_CHECK(n <= INT32_MAX, rt::Error::InvalidArgument, "%s: dim %d would have %d x %d elements", op, i,
             static_cast<int>(in_sizes[i]), static_cast<int>(repeats[i]));
    out_sizes[i] = static_cast<int32_t>(n);
  }
  RT_TRY(check_out_shape(op, *out, out_sizes, rank));
  size_t in_strides[rt::kMaxDims];
  contiguous_strides(in_sizes, rank, in_strides);
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* x = self->data_as<U>();
    U* y = out->data_as<U>();
    int32_t at[rt::kMaxDims] = {};  // the multi-index of out element j
    for (size_t j = 0; j < out->numel; ++j) {
      size_t src = 0;
      for (int i = 0; i < rank; ++i) src += static_cast<size_t>(at[i] % in_sizes[i]) * in_strides[i];
      y[j] = x[src];
      for (int i = rank - 1; i >= 0; --i) {
        if (++at[i] < out_sizes[i]) break;
        at[i] = 0;
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
