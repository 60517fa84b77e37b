// aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
//     int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))
// aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False,
//     bool count_include_pad=True, int? divisor_override=None, *, Tensor(a!) out) -> Tensor(a!)
//
// 2-d pooling over the last two dims of a (C, H, W) or (N, C, H, W) tensor,
// as ExecuTorch's portable kernels compute it:
//   - every parameter list has 1 or 2 values (stride may be empty: the kernel
//     size); padding is at most half the kernel; the output size uses C
//     division and, in ceil mode, drops a last window starting in the right
//     padding;
//   - max: the first in-bounds element of the window, replaced only by a
//     strictly greater one (a NaN first stays, a NaN later is skipped); the
//     index is y * W + x in the input plane. A dilated window with no element
//     inside the input gives 0 and index 0;
//   - avg: the window's in-bounds elements summed in row-major order, divided
//     by divisor_override, or by the window clipped to the padded input
//     (count_include_pad) or to the input itself. Long divides as integers
//     (toward zero) and wraps. Half and BFloat16 sum and divide in the dtype (each
//     sum and the quotient round to it, as ExecuTorch's CTYPE accumulator does).
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"
#include "kernels/window.h"

namespace kernels {
namespace {

constexpr uint32_t kMaxPoolDtypes = kRealHBF16Dtypes;
constexpr uint32_t kAvgPoolDtypes = kFloatHBF16Dtypes | bit(ScalarType::Long);

struct Pool2d {
  int64_t k[2], s[2], p[2], d[2];
  int64_t in_h, in_w, out_h, out_w;
  size_t planes;          // N * C
  int32_t out_sizes[4];   // the output's shape
  int dim;                // 3 or 4
};

// The checks both pools share; `dilation` null for avg_pool2d (1).
KERNELS_SCALAR_SETUP rt::Error make_pool(const char* op, const rt::Tensor& self,
                                         const rt::ArrayRef<int64_t>& kernel_size, const rt::ArrayRef<int64_t>& stride,
                                         const rt::ArrayRef<int64_t>& padding, const rt::ArrayRef<int64_t>* dilation,
                                         bool ceil_mode, Pool2d& g) {
  const int n = self.dim;
  RT_CHECK((n == 3 || n == 4) && self.sizes[n - 3] > 0 && self.sizes[n - 2] > 0 && self.sizes[n - 1] > 0,
           rt::Error::ShapeMismatch, "%s: self %s must be (C, H, W) or (N, C, H, W) with non-empty C, H and W", op,
           ShapeStr(self).c_str());
  const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  RT_TRY(window_param(op, "kernel_size", kernel_size, 2, 1, false, ones, g.k));
  RT_TRY(window_param(op, "stride", stride, 2, 1, true, g.k, g.s));
  RT_TRY(window_param(op, "padding", padding, 2, 0, false, zeros, g.p));
  if (dilation != nullptr) {
    RT_TRY(window_param(op, "dilation", *dilation, 2, 1, false, ones, g.d));
  } else {
    g.d[0] = g.d[1] = 1;
  }
  for (int i = 0; i < 2; ++i) {
    RT_CHECK(g.p[i] <= g.k[i] / 2, rt::Error::InvalidArgument,
             "%s: padding[%d] = %lld is more than half of kernel_size[%d] = %lld", op, i,
             static_cast<long long>(g.p[i]), i, static_cast<long long>(g.k[i]));
  }
  g.dim = n;
  g.in_h = self.sizes[n - 2];
  g.in_w = self.sizes[n - 1];
  int64_t sizes[4];
  for (int i = 0; i < n - 2; ++i) sizes[i] = self.sizes[i];
  sizes[n - 2] = window_out_size(g.in_h, g.k[0], g.p[0], g.s[0], g.d[0], ceil_mode);
  sizes[n - 1] = window_out_size(g.in_w, g.k[1], g.p[1], g.s[1], g.d[1], ceil_mode);
  RT_TRY(check_window_out(op, sizes, n, 2, g.out_sizes));
  g.out_h = g.out_sizes[n - 2];
  g.out_w = g.out_sizes[n - 1];
  g.planes = size_product(self.sizes, 0, n - 2);
  return rt::Error::Ok;
}

template <typename T>
void max_pool(const Pool2d& g, const T* x, T* y, int64_t* idx) {
  const size_t in_plane = static_cast<size_t>(g.in_h * g.in_w);
  for (size_t c = 0; c < g.planes; ++c, x += in_plane) {
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        bool found = false;
        T best = T(0);
        int64_t at = 0;
        for (int64_t wy = 0; wy < g.k[0]; ++wy) {
          const int64_t iy = oy * g.s[0] + wy * g.d[0] - g.p[0];
          if (iy < 0 || iy >= g.in_h) continue;
          for (int64_t wx = 0; wx < g.k[1]; ++wx) {
            const int64_t ix = ox * g.s[1] + wx * g.d[1] - g.p[1];
            if (ix < 0 || ix >= g.in_w) continue;
            const int64_t i = iy * g.in_w + ix;
            const T v = x[i];
            if (!found || v > best) {
              best = v;
              at = i;
              found = true;
            }
          }
        }
        *y++ = best;
        *idx++ = at;
      }
    }
  }
}

// x / n as ExecuTorch's kernels compute it in T (integers: toward zero, wrapping).
template <typename T>
T divide(T x, int64_t n) {
  if constexpr (is_float_v<T>) {
    return x / static_cast<T>(n);
  } else {
    if (n == -1) return static_cast<T>(0u - static_cast<uint64_t>(x));  // INT64_MIN / -1 wraps
    return static_cast<T>(x / static_cast<T>(n));
  }
}

template <typename T>
T add(T a, T b) {
  if constexpr (is_float_v<T>) {
    return a + b;
  } else {
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}

template <typename T>
void avg_pool(const Pool2d& g, bool count_include_pad, const Optional<int64_t>& divisor, const T* x, T* y) {
  const size_t in_plane = static_cast<size_t>(g.in_h * g.in_w);
  for (size_t c = 0; c < g.planes; ++c, x += in_plane) {
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        int64_t y0 = oy * g.s[0] - g.p[0], x0 = ox * g.s[1] - g.p[1];
        int64_t y1 = y0 + g.k[0] < g.in_h + g.p[0] ? y0 + g.k[0] : g.in_h + g.p[0];
        int64_t x1 = x0 + g.k[1] < g.in_w + g.p[1] ? x0 + g.k[1] : g.in_w + g.p[1];
        const int64_t padded = (y1 - y0) * (x1 - x0);
        y0 = y0 < 0 ? 0 : y0;
        x0 = x0 < 0 ? 0 : x0;
        y1 = y1 > g.in_h ? g.in_h : y1;
        x1 = x1 > g.in_w ? g.in_w : x1;
        T sum = T(0);
        for (int64_t iy = y0; iy < y1; ++iy) {
          for (int64_t ix = x0; ix < x1; ++ix) {
            const T v = x[iy * g.in_w + ix];
            sum = (iy == y0 && ix == x0) ? v : add(v, sum);
          }
        }
        const int64_t count = count_include_pad ? padded : (y1 - y0) * (x1 - x0);
        *y++ = divide(sum, divisor.present ? divisor.value : count);
      }
    }
  }
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_max_pool2d_with_indices_out)
rt::Error aten_max_pool2d_with_indices_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_max_pool2d_with_indices_out);
  Args a("aten::max_pool2d_with_indices.out", args, nargs);
  rt::Tensor *self, *out, *indices;
  rt::ArrayRef<int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
  RT_TRY(a.count(9));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "kernel_size", kernel_size));
  RT_TRY(a.int_list(2, "stride", stride));
  RT_TRY(a.int_list(3, "padding", padding));
  RT_TRY(a.int_list(4, "dilation", dilation));
  RT_TRY(a.boolean(5, "ceil_mode", ceil_mode));
  RT_TRY(a.tensor(6, "out", out));
  RT_TRY(a.tensor(7, "indices", indices));
  rt::Tensor* outs[2] = {out, indices};
  RT_TRY(a.optional_returned_list(8, rt::ArrayRef<rt::Tensor*>{outs, 2}));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_CHECK(indices->dtype == ScalarType::Long, rt::Error::DtypeMismatch, "%s: indices has dtype %s, expected Long",
           op, rt::scalar_type_name(indices->dtype));
  Pool2d g{};
  RT_TRY(make_pool(op, *self, kernel_size, stride, padding, &dilation, ceil_mode, g));
  RT_TRY(check_out_shape(op, *out, g.out_sizes, g.dim));
  RT_CHECK(shape_equals(*indices, g.out_sizes, g.dim), rt::Error::ShapeMismatch,
           "%s: indices has shape %s, expected %s", op, ShapeStr(*indices).c_str(),
           ShapeStr(g.out_sizes, g.dim).c_str());
  RT_CHECK(!overlaps(*out, *self) && !overlaps(*indices, *self), rt::Error::InvalidArgument,
           "%s: an output overlaps self", op);
  RT_CHECK(!overlaps(*out, *indices), rt::Error::InvalidArgument, "%s: out overlaps indices", op);
  return dispatch<kMaxPoolDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool<T>(g, self->data_as<T>(), out->data_as<T>(), indices->data_as<int64_t>());
    return rt::Error::Ok;
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_avg_pool2d_out)
rt::Error aten_avg_pool2d_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_avg_pool2d_out);
  Args a("aten::avg_pool2d.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  Optional<int64_t> divisor;
  RT_TRY(a.count(9));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "kernel_size", kernel_size));
  RT_TRY(a.int_list(2, "stride", stride));
  RT_TRY(a.int_list(3, "padding", padding));
  RT_TRY(a.boolean(4, "ceil_mode", ceil_mode));
  RT_TRY(a.boolean(5, "count_include_pad", count_include_pad));
  RT_TRY(a.optional_integer(6, "divisor_override", divisor));
  RT_TRY(a.tensor(7, "out", out));
  RT_TRY(a.returned(8, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_CHECK(!divisor.present || divisor.value != 0, rt::Error::InvalidArgument, "%s: divisor_override is 0", op);
  Pool2d g{};
  RT_TRY(make_pool(op, *self, kernel_size, stride, padding, nullptr, ceil_mode, g));
  RT_TRY(check_out_shape(op, *out, g.out_sizes, g.dim));
  RT_CHECK(!overlaps(*out, *self), rt::Error::InvalidArgument, "%s: out overlaps self", op);
  return dispatch<kAvgPoolDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool<T>(g, count_include_pad, divisor, self->data_as<T>(), out->data_as<T>());
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
