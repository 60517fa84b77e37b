// aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
//
// out[b] = self[b] (m x n) @ mat2[b] (n x p); all three of one dtype, no
// broadcasting. Semantics of ExecuTorch's portable kernel:
// each output element sums k = 0..n-1 in order, starting from 0 (the pip
// package's runtime sums floats in another order: results agree to a few ulps
// of the terms, not bit for bit); integers wrap; Half and BFloat16 accumulate in
// the dtype, rounding every product and sum (ExecuTorch's portable kernel; its
// pip runtime's optimized bmm sums in float). The multiply and its Helium
// blocks: kernels/matmul.h.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/matmul.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

constexpr uint32_t kBmmDtypes = kRealHBF16Dtypes;

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_bmm_out)
rt::Error aten_bmm_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_bmm_out);
  Args a("aten::bmm.out", args, nargs);
  rt::Tensor *self, *mat2, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "mat2", mat2));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_CHECK(self->dim == 3 && mat2->dim == 3, rt::Error::ShapeMismatch,
           "%s: self %s and mat2 %s must both be 3-d", op, ShapeStr(*self).c_str(), ShapeStr(*mat2).c_str());
  RT_CHECK(self->sizes[0] == mat2->sizes[0] && self->sizes[2] == mat2->sizes[1], rt::Error::ShapeMismatch,
           "%s: self %s and mat2 %s do not multiply", op, ShapeStr(*self).c_str(), ShapeStr(*mat2).c_str());
  const int32_t expected[3] = {self->sizes[0], self->sizes[1], mat2->sizes[2]};
  RT_TRY(check_out_shape(op, *out, expected, 3));
  RT_TRY(check_same_dtype(op, "self", *self, "mat2", *mat2));
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  // out is written while self and mat2 are still read.
  RT_CHECK(!overlaps(*out, *self) && !overlaps(*out, *mat2), rt::Error::InvalidArgument,
           "%s: out overlaps an input", op);
  const size_t batch = static_cast<size_t>(self->sizes[0]);
  const size_t m = static_cast<size_t>(self->sizes[1]);
  const size_t n = static_cast<size_t>(self->sizes[2]);
  const size_t p = static_cast<size_t>(mat2->sizes[2]);
  return dispatch<kBmmDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self->data_as<T>();
    const T* y = mat2->data_as<T>();
    T* z = out->data_as<T>();
    for (size_t i = 0; i < batch; ++i) matmul<T>(x + i * m * n, y + i * n * p, z + i * m * p, m, n, p);
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
