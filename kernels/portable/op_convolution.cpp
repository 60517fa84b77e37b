// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
//     SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *, Tensor(a!) out) -> Tensor(a!)
//
// 1-d (N, C, L) and 2-d (N, C, H, W) convolution, grouped (depthwise
// included) and transposed, as ExecuTorch's portable kernel computes it:
//   - input, weight and out share one dtype; bias (optional, 1-d, one value
//     per output channel) may have any real dtype and is converted to it;
//   - each output element starts from 0, adds input * weight over its
//     group's input channels, then the kernel rows and columns, in order
//     (taps outside the input are skipped, not added as zeros), and the bias
//     last. Integers compute in the dtype and wrap; Half and BFloat16 too (every
//     product and sum rounds to the dtype, as ExecuTorch's `CTYPE accum`);
//   - transposed: out starts as the bias (or 0) and every input element adds
//     input * weight into the outputs it reaches, input rows, columns and
//     channels in order, then kernel rows and columns.
// The direct loop runs one output channel plane at a time, tap by tap, over
// runs of output columns: each element still sees its terms in the order
// above. Helium (float32, column stride 1): a whole kernel row per output row,
// four columns at a time in registers (multiply, then add: the same roundings
// as the scalar path, bit for bit on normal numbers; Helium float arithmetic
// runs with the architecture's standard FPSCR value, which flushes subnormal
// operands and results to zero, where the scalar FPU keeps them).
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"
#include "kernels/window.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {
namespace {

constexpr uint32_t kConvDtypes = kRealHBF16Dtypes;

// The call as a 2-d convolution (1-d: H = 1, a 1-row kernel, stride,
// padding and dilation 1/0/1 along H).
struct Conv {
  int64_t n, c_in, h, w;   // input
  int64_t c_out, oh, ow;   // output
  int64_t kh, kw;          // kernel
  int64_t s[2], p[2], d[2];
  int64_t groups;
  bool transposed;
};

template <typename T>
T mul_add(T acc, T x, T w) {
  if constexpr (is_float_v<T>) {
    return acc + x * w;
  } else {
    using U = std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>;
    return static_cast<T>(static_cast<U>(acc) + static_cast<U>(x) * static_cast<U>(w));
  }
}

template <typename T>
T plus(T a, T b) {
  if constexpr (is_float_v<T>) {
    return a + b;
  } else {
    using U = std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
}

// o[i] += x[i * sx] * w for i < n.
template <typename T>
void tap_run(T* o, const T* x, size_t sx, size_t n, T w) {
  for (size_t i = 0; i < n; ++i) o[i] = mul_add(o[i], x[i * sx], w);
}

// The outputs [lo, hi) of a dim whose input index o * s + off lies in [0, in).
inline void valid_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t last = in - 1 - off;
  hi = last < 0 ? 0 : last / s + 1;
  if (hi > out) hi = out;
  if (lo > hi) lo = hi;
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define KERNELS_CONV_MVE 1
// o[i] += x[i + wx * d] * k[wx] for i < n, wx < kw in order (kKw: kw known at compile time, or 0).
template <int kKw>
inline void taps_f32(float* o, const float* x, const float* k, int32_t kw, int32_t d, uint32_t n) {
  float kr[kKw > 0 ? kKw : 1] = {};
  if constexpr (kKw > 0) {
    for (int i = 0; i < kKw; ++i) kr[i] = k[i];
  }
  (void)kr;
  auto row = [&](float32x4_t acc, auto load) {
    if constexpr (kKw > 0) {
      for (int wx = 0; wx < kKw; ++wx) acc = vaddq_f32(acc, vmulq_n_f32(load(x + wx * d), kr[wx]));
    } else {
      const float* xp = x;
      for (int32_t wx = 0; wx < kw; ++wx, xp += d) acc = vaddq_f32(acc, vmulq_n_f32(load(xp), k[wx]));
    }
    return acc;
  };
  for (; n >= 4; n -= 4, o += 4, x += 4) {
    vst1q_f32(o, row(vld1q_f32(o), [](const float* q) { return vld1q_f32(q); }));
  }
  if (n > 0) {
    const mve_pred16_t m = vctp32q(n);
    vstrwq_p_f32(o, row(vldrwq_z_f32(o, m), [m](const float* q) { return vldrwq_z_f32(q, m); }), m);
  }
}

// One output row of a stride-1 float convolution: o[ox] += x[ox + wx * d - p] * k[wx] for every
// kernel column wx in order (what the tap-by-tap scalar path adds, in the same order, multiply
// then add: bit for bit the same). Columns where every tap is inside the input run four at a
// time with the row in registers; the edges take their in-bounds taps one element at a time.
// The output columns [lo, hi) where every tap of a kernel row lies inside the input (stride 1).
inline void row_interior(int64_t kw, int64_t d, int64_t p, int64_t w, int64_t ow, int64_t& lo, int64_t& hi) {
  int64_t lo_last, hi_first;
  valid_range(-p, 1, w, ow, lo, hi_first);                // tap 0
  valid_range((kw - 1) * d - p, 1, w, ow, lo_last, hi);  // the last tap
  if (lo < lo_last) lo = lo_last;                         // taps in between lie in between
  if (hi > hi_first) hi = hi_first;
  if (hi < lo) hi = lo;
}

// Rows o[r * ow], r < rows, over input rows x[r * x_step] (see above).
template <int kKw>
void rows_taps_f32(float* o, const float* x, const float* k, int32_t kw, int32_t d, int32_t p, int32_t w, int32_t ow,
                   int32_t lo, int32_t hi, int32_t rows, int32_t x_step) {
  auto edge = [&](float* orow, const float* xrow, int32_t ox) {
    float v = orow[ox];
    for (int32_t wx = 0, ix = ox - p; wx < kw; ++wx, ix += d) {
      if (ix >= 0 && ix < w) v = v + xrow[ix] * k[wx];
    }
    orow[ox] = v;
  };
  for (int32_t r = 0; r < rows; ++r, o += ow, x += x_step) {
    for (int32_t ox = 0; ox < lo; ++ox) edge(o, x, ox);
    taps_f32<kKw>(o + lo, x + (lo - p), k, kw, d, static_cast<uint32_t>(hi - lo));
    for (int32_t ox = hi; ox < ow; ++ox) edge(o, x, ox);
  }
}

inline void row_taps_f32(float* o, const float* x, const float* k, int32_t kw, int32_t d, int32_t p, int32_t w,
                         int32_t ow, int32_t lo, int32_t hi, int32_t rows, int32_t x_step) {
  switch (kw) {  // the common widths with the kernel row in registers
    case 1:
      rows_taps_f32<1>(o, x, k, 1, d, p, w, ow, lo, hi, rows, x_step);
      break;
    case 3:
      rows_taps_f32<3>(o, x, k, 3, d, p, w, ow, lo, hi, rows, x_step);
      break;
    case 5:
      rows_taps_f32<5>(o, x, k, 5, d, p, w, ow, lo, hi, rows, x_step);
      break;
    default:
      rows_taps_f32<0>(o, x, k, kw, d, p, w, ow, lo, hi, rows, x_step);
      break;
  }
}
#else
#define KERNELS_CONV_MVE 0
#endif

template <typename T, typename Bias>
void conv_direct(const Conv& c, const T* x, const T* wt, const Bias& bias, T* y) {
  const int64_t icpg = c.c_in / c.groups, ocpg = c.c_out / c.groups;
  const size_t in_plane = static_cast<size_t>(c.h * c.w), out_plane = static_cast<size_t>(c.oh * c.ow);
#if KERNELS_CONV_MVE
  // Helium rows: float, column stride 1, and a row's column arithmetic inside int32.
  const bool rows = std::is_same_v<T, float> && c.s[1] == 1 &&
                    c.kw * c.d[1] + c.p[1] + c.w + c.ow + c.s[0] * c.w < (int64_t{1} << 30);
  int64_t in_lo = 0, in_hi = 0;
  if (rows) row_interior(c.kw, c.d[1], c.p[1], c.w, c.ow, in_lo, in_hi);
  (void)rows;
#endif
  for (int64_t b = 0; b < c.n; ++b) {
    for (int64_t oc = 0; oc < c.c_out; ++oc) {
      const int64_t g = oc / ocpg;
      T* o = y + static_cast<size_t>(b * c.c_out + oc) * out_plane;
      for (size_t i = 0; i < out_plane; ++i) o[i] = T(0);
      for (int64_t icl = 0; icl < icpg; ++icl) {
        const T* xin = x + static_cast<size_t>(b * c.c_in + g * icpg + icl) * in_plane;
        const T* k = wt + static_cast<size_t>((oc * icpg + icl) * c.kh * c.kw);
        for (int64_t wy = 0; wy < c.kh; ++wy) {
          int64_t y0, y1;
          valid_range(wy * c.d[0] - c.p[0], c.s[0], c.h, c.oh, y0, y1);
#if KERNELS_CONV_MVE
          if constexpr (std::is_same_v<T, float>) {
            if (rows) {
              if (y0 < y1) {
                const int64_t iy = y0 * c.s[0] + wy * c.d[0] - c.p[0];
                row_taps_f32(o + y0 * c.ow, xin + iy * c.w, k + wy * c.kw, static_cast<int32_t>(c.kw),
                             static_cast<int32_t>(c.d[1]), static_cast<int32_t>(c.p[1]), static_cast<int32_t>(c.w),
                             static_cast<int32_t>(c.ow), static_cast<int32_t>(in_lo), static_cast<int32_t>(in_hi),
                             static_cast<int32_t>(y1 - y0), static_cast<int32_t>(c.s[0] * c.w));
              }
              continue;
            }
          }
#endif
          for (int64_t wx = 0; wx < c.kw; ++wx) {
            int64_t x0, x1;
            const int64_t xoff = wx * c.d[1] - c.p[1];
            valid_range(xoff, c.s[1], c.w, c.ow, x0, x1);
            if (x0 == x1) continue;
            const T kv = k[wy * c.kw + wx];
            for (int64_t oy = y0; oy < y1; ++oy) {
              const int64_t iy = oy * c.s[0] + wy * c.d[0] - c.p[0];
              tap_run<T>(o + oy * c.ow + x0, xin + iy * c.w + x0 * c.s[1] + xoff, static_cast<size_t>(c.s[1]),
                         static_cast<size_t>(x1 - x0), kv);
            }
          }
        }
      }
      if (bias.present) {
        const T bv = bias.value(static_cast<size_t>(oc));
        for (size_t i = 0; i < out_plane; ++i) o[i] = plus(o[i], bv);
      }
    }
  }
}

template <typename T, typename Bias>
void conv_transposed(const Conv& c, const T* x, const T* wt, const Bias& bias, T* y) {
  const int64_t icpg = c.c_in / c.groups, ocpg = c.c_out / c.groups;
  const size_t in_plane = static_cast<size_t>(c.h * c.w), out_plane = static_cast<size_t>(c.oh * c.ow);
  for (int64_t b = 0; b < c.n; ++b) {
    for (int64_t oc = 0; oc < c.c_out; ++oc) {
      T* o = y + static_cast<size_t>(b * c.c_out + oc) * out_plane;
      const T start = bias.present ? bias.value(static_cast<size_t>(oc)) : T(0);
      for (size_t i = 0; i < out_plane; ++i) o[i] = start;
    }
  }
  for (int64_t b = 0; b < c.n; ++b) {
    for (int64_t oc = 0; oc < c.c_out; ++oc) {
      const int64_t g = oc / ocpg, ocl = oc % ocpg;
      T* o = y + static_cast<size_t>(b * c.c_out + oc) * out_plane;
      for (int64_t iy = 0; iy < c.h; ++iy) {
        for (int64_t ix = 0; ix < c.w; ++ix) {
          for (int64_t icl = 0; icl < icpg; ++icl) {
            const int64_t ic = g * icpg + icl;
            const T v = x[static_cast<size_t>(b * c.c_in + ic) * in_plane + static_cast<size_t>(iy * c.w + ix)];
            const T* k = wt + static_cast<size_t>((ic * ocpg + ocl) * c.kh * c.kw);
            for (int64_t wy = 0; wy < c.kh; ++wy) {
              const int64_t oy = c.s[0] * iy + c.d[0] * wy - c.p[0];
              if (oy < 0 || oy >= c.oh) continue;
              for (int64_t wx = 0; wx < c.kw; ++wx) {
                const int64_t ox = c.s[1] * ix + c.d[1] * wx - c.p[1];
                if (ox < 0 || ox >= c.ow) continue;
                T& r = o[oy * c.ow + ox];
                r = mul_add(r, v, k[wy * c.kw + wx]);
              }
            }
          }
        }
      }
    }
  }
}

// The optional bias, read as T whatever its dtype.
template <typename T>
struct BiasOf {
  bool present;
  LoadFn<T> load;
  const void* data;
  T value(size_t i) const { return load(data, i); }
};

struct ConvArgs {
  rt::Tensor *input, *weight, *bias, *out;
  rt::ArrayRef<int64_t> stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
};

KERNELS_SCALAR_SETUP rt::Error make_conv(const char* op, const ConvArgs& a, Conv& c, int32_t* out_sizes) {
  const rt::Tensor& in = *a.input;
  const rt::Tensor& w = *a.weight;
  RT_CHECK(in.dim == 3 || in.dim == 4, rt::Error::ShapeMismatch, "%s: input %s must be 3-d or 4-d", op,
           ShapeStr(in).c_str());
  RT_CHECK(w.dim == in.dim, rt::Error::ShapeMismatch, "%s: weight %s must have the %d dims of input %s", op,
           ShapeStr(w).c_str(), in.dim, ShapeStr(in).c_str());
  RT_TRY(check_same_dtype(op, "input", in, "weight", w));
  RT_TRY(check_same_dtype(op, "input", in, "out", *a.out));
  // The spatial dims as (H, W): a 1-d convolution's parameters go to W, H keeps stride 1,
  // padding 0, dilation 1 (and a 1-row kernel and input).
  const int nk = in.dim - 2;
  const int at = 2 - nk;
  const int64_t ones[2] = {1, 1}, zeros[2] = {0, 0};
  int64_t s[2] = {1, 1}, p[2] = {0, 0}, d[2] = {1, 1}, op_pad[2] = {0, 0};
  RT_TRY(window_param(op, "stride", a.stride, nk, 1, false, ones, s + at));
  RT_TRY(window_param(op, "padding", a.padding, nk, 0, false, zeros, p + at));
  RT_TRY(window_param(op, "dilation", a.dilation, nk, 1, false, ones, d + at));
  if (a.transposed) {
    RT_TRY(window_param(op, "output_padding", a.output_padding, nk, 0, false, zeros, op_pad + at));
    for (int i = at; i < 2; ++i) {
      RT_CHECK(op_pad[i] < s[i] || op_pad[i] < d[i], rt::Error::InvalidArgument,
               "%s: output_padding[%d] = %lld must be smaller than the stride or the dilation", op, i - at,
               static_cast<long long>(op_pad[i]));
    }
  }
  RT_CHECK(a.groups >= 1 && w.sizes[0] >= a.groups && w.sizes[0] % a.groups == 0, rt::Error::InvalidArgument,
           "%s: groups = %lld must divide weight %s at dim 0", op, static_cast<long long>(a.groups),
           ShapeStr(w).c_str());
  const int64_t w1 = w.sizes[1];
  if (!a.transposed) {
    RT_CHECK(in.sizes[1] == a.groups * w1, rt::Error::ShapeMismatch,
             "%s: input %s must have groups (%lld) x weight.size(1) (%lld) channels", op, ShapeStr(in).c_str(),
             static_cast<long long>(a.groups), static_cast<long long>(w1));
  } else {
    RT_CHECK(in.sizes[1] == w.sizes[0], rt::Error::ShapeMismatch,
             "%s: input %s must have weight.size(0) (%d) channels (transposed)", op, ShapeStr(in).c_str(),
             static_cast<int>(w.sizes[0]));
  }
  const int64_t c_out = a.transposed ? a.groups * w1 : w.sizes[0];
  if (a.bias != nullptr) {
    RT_CHECK(a.bias->dim == 1 && a.bias->sizes[0] == c_out, rt::Error::ShapeMismatch,
             "%s: bias %s must be 1-d with one value per output channel (%lld)", op, ShapeStr(*a.bias).c_str(),
             static_cast<long long>(c_out));
    RT_CHECK(a.bias->dtype != ScalarType::Bool, rt::Error::DtypeMismatch, "%s: bias has dtype Bool", op);
  }
  c.n = in.sizes[0];
  c.c_in = in.sizes[1];
  c.c_out = c_out;
  c.h = nk == 2 ? in.sizes[2] : 1;
  c.w = in.sizes[in.dim - 1];
  c.kh = nk == 2 ? w.sizes[2] : 1;
  c.kw = w.sizes[w.dim - 1];
  for (int i = 0; i < 2; ++i) {
    c.s[i] = s[i];
    c.p[i] = p[i];
    c.d[i] = d[i];
  }
  c.groups = a.groups;
  c.transposed = a.transposed;
  const int64_t in_hw[2] = {c.h, c.w}, k_hw[2] = {c.kh, c.kw};
  int64_t sizes[4] = {c.n, c.c_in == 0 ? 0 : c_out, 0, 0};
  for (int i = at; i < 2; ++i) {
    sizes[2 + i - at] = window_out_size(in_hw[i], k_hw[i], p[i], s[i], d[i], false, a.transposed, op_pad[i]);
  }
  RT_TRY(check_window_out(op, sizes, in.dim, nk, out_sizes));
  c.oh = nk == 2 ? out_sizes[2] : 1;
  c.ow = out_sizes[in.dim - 1];
  return rt::Error::Ok;
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_convolution_out)
rt::Error aten_convolution_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_convolution_out);
  Args a("aten::convolution.out", args, nargs);
  ConvArgs ca{};
  RT_TRY(a.count(11));
  RT_TRY(a.tensor(0, "input", ca.input));
  RT_TRY(a.tensor(1, "weight", ca.weight));
  RT_TRY(a.optional_tensor(2, "bias", ca.bias));
  RT_TRY(a.int_list(3, "stride", ca.stride));
  RT_TRY(a.int_list(4, "padding", ca.padding));
  RT_TRY(a.int_list(5, "dilation", ca.dilation));
  RT_TRY(a.boolean(6, "transposed", ca.transposed));
  RT_TRY(a.int_list(7, "output_padding", ca.output_padding));
  RT_TRY(a.integer(8, "groups", ca.groups));
  RT_TRY(a.tensor(9, "out", ca.out));
  RT_TRY(a.returned(10, ca.out));
  const char* op = a.op();
  Conv c{};
  int32_t out_sizes[4];
  RT_TRY(make_conv(op, ca, c, out_sizes));
  RT_TRY(check_out_shape(op, *ca.out, out_sizes, ca.input->dim));
  const rt::Tensor& out = *ca.out;
  RT_CHECK(!overlaps(out, *ca.input) && !overlaps(out, *ca.weight) && (ca.bias == nullptr || !overlaps(out, *ca.bias)),
           rt::Error::InvalidArgument, "%s: out overlaps an input", op);
  return dispatch<kConvDtypes, kSelected>(op, "input", ca.input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    BiasOf<T> bias{ca.bias != nullptr, nullptr, nullptr};
    if (bias.present) {
      bias.load = load_fn<T, kSelected & kRealHBF16Dtypes>(ca.bias->dtype);
      if (bias.load == nullptr) return dtype_unavailable(kRealHBF16Dtypes, op, "bias", ca.bias->dtype);
      bias.data = ca.bias->data;
    }
    if (out.numel == 0) return rt::Error::Ok;
    if (c.transposed) {
      conv_transposed<T>(c, ca.input->data_as<T>(), ca.weight->data_as<T>(), bias, out.data_as<T>());
    } else {
      conv_direct<T>(c, ca.input->data_as<T>(), ca.weight->data_as<T>(), bias, out.data_as<T>());
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
