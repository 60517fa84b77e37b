// aten::flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
//
// out = self with the listed dims reversed; same dtype and shape. Dims may be negative; a dim
// listed twice is refused, as ExecuTorch refuses it. A copy, so every dtype (by its width).
#include <stddef.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

// Walks out in order; the source offset moves by each dim's stride, negated where flipped.
template <typename U>
void flip_copy(U* dst, const U* src, int dim, const int32_t* sizes, const bool* flipped) {
  ptrdiff_t step[rt::kMaxDims];
  ptrdiff_t offset = 0;
  size_t total = 1;
  ptrdiff_t stride = 1;
  for (int d = dim - 1; d >= 0; --d) {
    step[d] = flipped[d] ? -stride : stride;
    if (flipped[d] && sizes[d] > 0) offset += (sizes[d] - 1) * stride;
    stride *= sizes[d];
    total *= static_cast<size_t>(sizes[d]);
  }
  int32_t index[rt::kMaxDims] = {};
  for (size_t i = 0; i < total; ++i) {
    dst[i] = src[offset];
    for (int d = dim - 1; d >= 0; --d) {
      offset += step[d];
      if (++index[d] < sizes[d]) break;
      offset -= step[d] * sizes[d];
      index[d] = 0;
    }
  }
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_flip_out)
rt::Error aten_flip_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_flip_out);
  Args a("aten::flip.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> dims;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "dims", dims));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  RT_CHECK(!overlaps(*out, *self), rt::Error::InvalidArgument, "%s: out overlaps self", op);
  bool flipped[rt::kMaxDims] = {};
  for (size_t i = 0; i < dims.size; ++i) {
    int d = 0;
    RT_TRY(normalize_dim(op, "dims[i]", dims[i], self->dim, d, true));
    RT_CHECK(!flipped[d], rt::Error::InvalidArgument, "%s: dim %d repeats", op, d);
    flipped[d] = self->dim > 0;
  }
  return dispatch_width<kSelected>(op, "self", self->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    flip_copy<U>(out->data_as<U>(), self->data_as<U>(), self->dim, self->sizes, flipped);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
