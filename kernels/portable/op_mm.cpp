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
//
// aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)
//                                                              out = input @ weight^T + bias
// What the Arm partitioner leaves of nn.Linear when it is forced to the CPU (it
// keeps aten.linear whole). ExecuTorch's checks: weight 2-d (out_features,
// in_features), input's last dim in_features, out input's shape with the last
// dim out_features, one dtype for input, weight, out and bias, bias 1-d of
// out_features or 1 element (broadcast). input 1-d is also taken (PyTorch's
// semantics: out (out_features,)), where ExecuTorch refuses it. Each element is
// the dot of an input row and a weight row in k order (matmul_transposed), then
// + bias in the dtype (integers wrap).
//
// Half and BFloat16: mm and addmm compute in the dtype as ExecuTorch's portable kernels do
// (every product, partial sum, * alpha, * beta and + rounds to it). linear has no portable
// kernel in ExecuTorch; its optimized one (a gemm) computes the dot in float, adds the bias
// in float and rounds once, and so does this one (the dot in k order).
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

constexpr uint32_t kMmDtypes = kRealHBF16Dtypes;

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

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_linear_out)
rt::Error aten_linear_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_linear_out);
  Args a("aten::linear.out", args, nargs);
  rt::Tensor *input, *weight, *bias, *out;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "input", input));
  RT_TRY(a.tensor(1, "weight", weight));
  RT_TRY(a.optional_tensor(2, "bias", bias));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(input->dim >= 1, rt::Error::ShapeMismatch, "%s: input %s must have at least 1 dim", op,
           ShapeStr(*input).c_str());
  RT_CHECK(weight->dim == 2, rt::Error::ShapeMismatch, "%s: weight %s must be 2-d", op, ShapeStr(*weight).c_str());
  const int d = input->dim;
  RT_CHECK(input->sizes[d - 1] == weight->sizes[1], rt::Error::ShapeMismatch,
           "%s: input %s and weight %s do not multiply (in_features)", op, ShapeStr(*input).c_str(),
           ShapeStr(*weight).c_str());
  int32_t expected[rt::kMaxDims];
  for (int i = 0; i < d - 1; ++i) expected[i] = input->sizes[i];
  expected[d - 1] = weight->sizes[0];
  RT_TRY(check_out_shape(op, *out, expected, d));
  RT_TRY(check_same_dtype(op, "input", *input, "weight", *weight));
  RT_TRY(check_same_dtype(op, "input", *input, "out", *out));
  const size_t p = static_cast<size_t>(weight->sizes[0]);
  if (bias != nullptr) {
    RT_TRY(check_same_dtype(op, "bias", *bias, "out", *out));
    RT_CHECK(bias->dim == 1 && (static_cast<size_t>(bias->sizes[0]) == p || bias->sizes[0] == 1),
             rt::Error::ShapeMismatch, "%s: bias %s must be 1-d of out_features (%d) or 1 element", op,
             ShapeStr(*bias).c_str(), static_cast<int>(p));
    RT_CHECK(!overlaps(*out, *bias), rt::Error::InvalidArgument, "%s: out overlaps bias", op);
  }
  RT_CHECK(!overlaps(*out, *input) && !overlaps(*out, *weight), rt::Error::InvalidArgument,
           "%s: out overlaps an input", op);
  const size_t n = static_cast<size_t>(weight->sizes[1]);
  const size_t m = size_product(input->sizes, 0, d - 1);
  return dispatch<kMmDtypes, kSelected>(op, "input", input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = out->data_as<T>();
    if constexpr (is_reduced_float_v<T>) {
      const T* x = input->data_as<T>();
      const T* w = weight->data_as<T>();
      const T* b = bias != nullptr ? bias->data_as<T>() : nullptr;
      const size_t step = bias != nullptr && bias->sizes[0] == 1 ? 0 : 1;
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < p; ++j) {
          float acc = 0.0f;
          for (size_t k = 0; k < n; ++k) acc += static_cast<float>(x[i * n + k]) * static_cast<float>(w[j * n + k]);
          y[i * p + j] = T(b != nullptr ? static_cast<float>(b[j * step]) + acc : acc);
        }
      }
      return rt::Error::Ok;
    }
    matmul_transposed<T>(input->data_as<T>(), weight->data_as<T>(), y, m, n, p);
    if (bias != nullptr) {
      const T* b = bias->data_as<T>();
      const size_t step = bias->sizes[0] == 1 ? 0 : 1;
      for (size_t i = 0; i < m; ++i) {
        for (size_t j = 0; j < p; ++j) y[i * p + j] = Arith<T>::add(y[i * p + j], b[j * step]);
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
