// aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)
// aten::transpose_copy.int_out(Tensor self, int dim0, int dim1, *, Tensor(a!) out) -> Tensor(a!)
//
// out.size(i) = self.size(dims[i]); out is written in order while self is
// read through its strides permuted (dims that stay together are walked as
// one run, see StridedLoop::collapse).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

// `perm` is a validated permutation of self's dims.
template <uint32_t kSelected>
rt::Error permute(const char* op, const rt::Tensor& self, const int* perm, rt::Tensor& out) {
  RT_TRY(check_same_dtype(op, "self", self, "out", out));
  int32_t sizes[rt::kMaxDims];
  size_t self_strides[rt::kMaxDims];
  size_t strides[rt::kMaxDims];
  contiguous_strides(self.sizes, self.dim, self_strides);
  for (int i = 0; i < self.dim; ++i) {
    sizes[i] = self.sizes[perm[i]];
    strides[i] = self_strides[perm[i]];
  }
  RT_TRY(check_out_shape(op, out, sizes, self.dim));
  RT_CHECK(!overlaps(out, self), rt::Error::InvalidArgument, "%s: out overlaps self", op);
  return dispatch_width<kSelected>(op, "self", self.dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gather<U>(out.data_as<U>(), self.data_as<U>(), self.dim, sizes, strides);
    return rt::Error::Ok;
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_permute_copy_out)
rt::Error aten_permute_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_permute_copy_out);
  Args a("aten::permute_copy.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> dims;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "dims", dims));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  RT_CHECK(dims.size == self->dim, rt::Error::InvalidArgument, "%s: %u dims for a %u-d tensor", a.op(),
           static_cast<unsigned>(dims.size), static_cast<unsigned>(self->dim));
  int perm[rt::kMaxDims];
  bool seen[rt::kMaxDims] = {};
  for (size_t i = 0; i < dims.size; ++i) {
    RT_TRY(normalize_dim(a.op(), "dims[i]", dims[i], self->dim, perm[i]));
    RT_CHECK(!seen[perm[i]], rt::Error::InvalidArgument, "%s: dim %d repeats", a.op(), perm[i]);
    seen[perm[i]] = true;
  }
  return permute<kSelected>(a.op(), *self, perm, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_transpose_copy_int_out)
rt::Error aten_transpose_copy_int_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_transpose_copy_int_out);
  Args a("aten::transpose_copy.int_out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim0, dim1;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim0", dim0));
  RT_TRY(a.integer(2, "dim1", dim1));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  int d0 = 0, d1 = 0;
  RT_TRY(normalize_dim(a.op(), "dim0", dim0, self->dim, d0, true));
  RT_TRY(normalize_dim(a.op(), "dim1", dim1, self->dim, d1, true));
  int perm[rt::kMaxDims];
  for (int i = 0; i < self->dim; ++i) perm[i] = i;
  if (self->dim > 0) {
    perm[d0] = d1;
    perm[d1] = d0;
  }
  return permute<kSelected>(a.op(), *self, perm, *out);
}
#endif

}  // namespace kernels
