// aten::_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
// aten::_log_softmax.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out) -> Tensor(a!)
//
// ExecuTorch's formulas along `dim`, Float or Double, out of self's dtype:
//   softmax:     m = max, s = sum of exp(x - m) in order, out = exp(x - m) / s. exp(x - m)
//                is stored first and divided in place, which gives the same values as
//                computing it twice. Half and BFloat16 (softmax only): m in the dtype,
//                exp(x - m) and s in float, each output rounded once to the dtype.
//   log_softmax: m = max (std::max, the running maximum second: a NaN after the first
//                element does not stick), s = sum of exp(x - m) in order,
//                out = (x - m) - log(s).
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

inline float exp_of(float x) { return expf(x); }
inline double exp_of(double x) { return exp(x); }
inline float log_of(float x) { return logf(x); }
inline double log_of(double x) { return log(x); }

// The checks both share: (self, dim, half_to_float, out, return); the run along dim.
inline rt::Error softmax_args(Args& a, rt::Tensor*& self, rt::Tensor*& out, DimSplit& s) {
  int64_t dim;
  bool half_to_float;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.boolean(2, "half_to_float", half_to_float));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(!half_to_float, rt::Error::NotSupported, "%s: half_to_float is not supported on CPU", op);
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self->dim, d, true));
  s = self->dim == 0 ? DimSplit{1, 1, 1} : split_at(*self, d);
  return rt::Error::Ok;
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten__softmax_out)
rt::Error aten__softmax_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten__softmax_out);
  Args a("aten::_softmax.out", args, nargs);
  rt::Tensor *self, *out;
  DimSplit s{1, 1, 1};
  RT_TRY(softmax_args(a, self, out, s));
  const char* op = a.op();
  return dispatch<kFloatHBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self->data_as<T>();
    T* y = out->data_as<T>();
    for (size_t o = 0; o < s.outer; ++o) {
      for (size_t i = 0; i < s.inner; ++i) {
        const size_t base = o * s.size * s.inner + i;
        if (s.size == 0) continue;
        T m = x[base];
        for (size_t k = 1; k < s.size; ++k) {
          const T v = x[base + k * s.inner];
          m = m < v ? v : m;
        }
        if constexpr (is_reduced_float_v<T>) {
          const float mf = static_cast<float>(m);
          float sum = 0.0f;
          for (size_t k = 0; k < s.size; ++k) sum += expf(static_cast<float>(x[base + k * s.inner]) - mf);
          for (size_t k = 0; k < s.size; ++k) {
            y[base + k * s.inner] = T(expf(static_cast<float>(x[base + k * s.inner]) - mf) / sum);
          }
          continue;
        }
        T sum = T(0);
        for (size_t k = 0; k < s.size; ++k) {
          const T e = exp_of(x[base + k * s.inner] - m);
          y[base + k * s.inner] = e;
          sum += e;
        }
        for (size_t k = 0; k < s.size; ++k) y[base + k * s.inner] /= sum;
      }
    }
    return rt::Error::Ok;
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten__log_softmax_out)
rt::Error aten__log_softmax_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten__log_softmax_out);
  Args a("aten::_log_softmax.out", args, nargs);
  rt::Tensor *self, *out;
  DimSplit s{1, 1, 1};
  RT_TRY(softmax_args(a, self, out, s));
  const char* op = a.op();
  return dispatch<kFloatDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = self->data_as<T>();
    T* y = out->data_as<T>();
    for (size_t o = 0; o < s.outer; ++o) {
      for (size_t i = 0; i < s.inner; ++i) {
        if (s.size == 0) continue;
        const T* run = x + o * s.size * s.inner + i;
        T* dst = y + o * s.size * s.inner + i;
        T m = run[0];
        for (size_t k = 1; k < s.size; ++k) {
          const T v = run[k * s.inner];
          m = v < m ? m : v;  // std::max(v, m)
        }
        T sum = exp_of(run[0] - m);
        for (size_t k = 1; k < s.size; ++k) sum += exp_of(run[k * s.inner] - m);
        const T log_sum = log_of(sum);
        for (size_t k = 0; k < s.size; ++k) dst[k * s.inner] = run[k * s.inner] - m - log_sum;
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
