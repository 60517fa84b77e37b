// aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)
// aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1,
//                 Tensor(a!) out) -> Tensor(a!)                 out = alpha * (mat1 @ mat2) + beta * self
//
// 2-d matrix products, all tensors of one dtype (what nn.Linear lowers to:
// permute_copy of the weight, then addmm, or mm without a bias). The product
// is kernels/matmul.h (k in order from 0, integers wrap); addmm then computes
// product * alpha + self * beta per element in the dtype, as ExecuTorch does,
// with self broadcast to (m, p). alpha and beta are converted to the dtype
// (a float scalar truncates for integers); beta = 0 still reads self (a NaN
// there stays NaN).
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/broadcast.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/matmul.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

constexpr uint32_t kMmDtypes = kRealDtypes;

// The checks of a (m x n) @ (n x p) -> out (m x p) product.
rt::Error check_product(const char* op, const char* a_name, const rt::Tensor& a, const char* b_name,
                        const rt::Tensor& b, const rt::Tensor& out) {
  RT_CHECK(a.dim == 2 && b.dim == 2, rt::Error::ShapeMismatch, "%s: %s %s and %s %s must both be 2-d", op, a_name,
           ShapeStr(a).c_str(), b_name, ShapeStr(b).c_str());
  RT_CHECK(a.sizes[1] == b.sizes[0], rt::Error::ShapeMismatch, "%s: %s %s and %s %s do not multiply", op, a_name,
           ShapeStr(a).c_str(), b_name, ShapeStr(b).c_str());
  const int32_t expected[2] = {a.sizes[0], b.sizes[1]};
  RT_TRY(check_out_shape(op, out, expected, 2));
  RT_TRY(check_same_dtype(op, a_name, a, b_name, b));
  RT_TRY(check_same_dtype(op, a_name, a, "out", out));
  RT_CHECK(!overlaps(out, a) && !overlaps(out, b), rt::Error::InvalidArgument, "%s: out overlaps an input", op);
  return rt::Error::Ok;
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_mm_out)
rt::Error aten_mm_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_mm_out);
  Args a("aten::mm.out", args, nargs);
  rt::Tensor *self, *mat2, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "mat2", mat2));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_TRY(check_product(op, "self", *self, "mat2", *mat2, *out));
  return dispatch<kMmDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmul<T>(self->data_as<T>(), mat2->data_as<T>(), out->data_as<T>(), static_cast<size_t>(self->sizes[0]),
              static_cast<size_t>(self->sizes[1]), static_cast<size_t>(mat2->sizes[1]));
    return rt::Error::Ok;
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_addmm_out)
rt::Error aten_addmm_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_addmm_out);
  Args a("aten::addmm.out", args, nargs);
  rt::Tensor *self, *mat1, *mat2, *out;
  Scalar beta, alpha;
  RT_TRY(a.count(7));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "mat1", mat1));
  RT_TRY(a.tensor(2, "mat2", mat2));
  RT_TRY(a.scalar(3, "beta", beta));
  RT_TRY(a.scalar(4, "alpha", alpha));
  RT_TRY(a.tensor(5, "out", out));
  RT_TRY(a.returned(6, out));
  const char* op = a.op();
  RT_TRY(check_product(op, "mat1", *mat1, "mat2", *mat2, *out));
  RT_TRY(check_same_dtype(op, "self", *self, "mat1", *mat1));
  RT_CHECK(broadcastable_to(*self, out->sizes, 2), rt::Error::ShapeMismatch,
           "%s: self %s does not broadcast to out %s", op, ShapeStr(*self).c_str(), ShapeStr(*out).c_str());
  // out is written by the product while self is still to be read.
  RT_CHECK(!overlaps(*out, *self), rt::Error::InvalidArgument, "%s: out overlaps self", op);
  const size_t m = static_cast<size_t>(mat1->sizes[0]);
  const size_t n = static_cast<size_t>(mat1->sizes[1]);
  const size_t p = static_cast<size_t>(mat2->sizes[1]);
  return dispatch<kMmDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T al = scalar_cast<T>(alpha), be = scalar_cast<T>(beta);
    T* y = out->data_as<T>();
    matmul<T>(mat1->data_as<T>(), mat2->data_as<T>(), y, m, n, p);
    size_t strides[2];
    broadcast_strides(*self, out->sizes, 2, strides);
    const T* s = self->data_as<T>();
    for (size_t i = 0; i < m; ++i) {
      const T* row = s + i * strides[0];
      for (size_t j = 0; j < p; ++j) {
        T& r = y[i * p + j];
        r = Arith<T>::add(Arith<T>::mul(r, al), Arith<T>::mul(row[j * strides[1]], be));
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
