// quantized_decomposed::quantize_per_tensor.out / .Tensor_out
//
//   q = clamp(int64(nearbyint(float(inv_scale * x)) + float(int32(zero_point))), quant_min, quant_max)
// with inv_scale = 1.0f / float(scale), all in float as ExecuTorch computes it
// (the product is rounded to float before rounding to an integer, and ties go
// to even). Non-finite values, which ExecuTorch leaves to the platform's
// float -> int64 conversion: -inf and NaN give quant_min (as on x86), +inf
// gives quant_max. A Half input is read as float (ExecuTorch's inv_scale * c10::Half is a
// float product); BFloat16 is not taken (ExecuTorch's FLOATH switch).
#include <math.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {
namespace {

struct QuantParams {
  float inv_scale;
  float zero_point;  // int32(zero_point) as float, as ExecuTorch adds it
  int32_t zero_point_i;
  int64_t quant_min;
  int64_t quant_max;
};

template <typename Q, typename K>
inline Q quantize_one(K x, const QuantParams& p) {
  const float scaled = static_cast<float>(p.inv_scale * x);
  const float r = nearbyintf(scaled) + p.zero_point;
  int64_t q;
  if (!(r == r)) {
    q = p.quant_min;
  } else if (r >= 9.2233720368547758e18f) {
    q = INT64_MAX;
  } else if (r < -9.2233720368547758e18f) {
    q = INT64_MIN;
  } else {
    q = static_cast<int64_t>(r);
  }
  q = q < p.quant_min ? p.quant_min : q;
  q = q > p.quant_max ? p.quant_max : q;
  return static_cast<Q>(q);
}

#if defined(__ARM_FEATURE_MVE)
// Four lanes at a time: vcvtn rounds to nearest-even and saturates, which
// equals the float formula whenever |q + zero_point| < 2^24, and beyond that
// both clamp. Returns how many elements it did (all, for 8/16-bit Q).
template <typename Q>
size_t quantize_mve(const float* in, Q* out, size_t n, const QuantParams& p) {
  if constexpr (sizeof(Q) > 2) {
    return 0;
  } else {
    if (p.zero_point_i >= (1 << 24) || p.zero_point_i <= -(1 << 24)) return 0;
    // Locals, not p's fields: the int8 stores may alias anything, which would
    // make the compiler reload p on every iteration.
    const float inv_scale = p.inv_scale;
    const int32_t zp = p.zero_point_i;
    const int32x4_t lo = vdupq_n_s32(static_cast<int32_t>(p.quant_min));
    const int32x4_t hi = vdupq_n_s32(static_cast<int32_t>(p.quant_max));
    const float32x4_t minus_inf = vdupq_n_f32(-__builtin_inff());
    auto lanes = [&](float32x4_t v) {
      // maxnm turns NaN into -inf, which then clamps to quant_min like the scalar path.
      const float32x4_t scaled = vmaxnmq_f32(vmulq_n_f32(v, inv_scale), minus_inf);
      const int32x4_t q = vqaddq_n_s32(vcvtnq_s32_f32(scaled), zp);
      return vminq_s32(vmaxq_s32(q, lo), hi);
    };
    const float* x = in;
    Q* y = out;
    for (size_t k = n / 4; k != 0; --k) {  // counted: a low-overhead loop
      const int32x4_t q = lanes(vld1q_f32(x));
      if constexpr (sizeof(Q) == 1) {
        vstrbq_s32(reinterpret_cast<int8_t*>(y), q);
      } else {
        vstrhq_s32(reinterpret_cast<int16_t*>(y), q);
      }
      x += 4;
      y += 4;
    }
    if (n % 4 != 0) {
      const mve_pred16_t tail = vctp32q(static_cast<uint32_t>(n % 4));
      const int32x4_t q = lanes(vldrwq_z_f32(x, tail));
      if constexpr (sizeof(Q) == 1) {
        vstrbq_p_s32(reinterpret_cast<int8_t*>(y), q, tail);
      } else {
        vstrhq_p_s32(reinterpret_cast<int16_t*>(y), q, tail);
      }
    }
    return n;
  }
}
#endif

template <uint32_t kSelected>
rt::Error quantize(const char* op, const rt::Tensor& in, double scale, int64_t zero_point, int64_t quant_min,
                   int64_t quant_max, rt::ScalarType dtype, rt::Tensor& out) {
  RT_TRY(check_same_shape(op, "input", in, "out", out));
  RT_CHECK(out.dtype == dtype, rt::Error::DtypeMismatch, "%s: out dtype %s != dtype argument %s", op,
           rt::scalar_type_name(out.dtype), rt::scalar_type_name(dtype));
  QuantParams p;
  p.inv_scale = 1.0f / static_cast<float>(scale);
  p.zero_point_i = static_cast<int32_t>(zero_point);
  p.zero_point = static_cast<float>(p.zero_point_i);
  p.quant_min = quant_min;
  p.quant_max = quant_max;
  return dispatch<kQuantDtypes, kSelected>(op, "out", out.dtype, [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    RT_CHECK(quant_min >= std::numeric_limits<Q>::min() && quant_max <= std::numeric_limits<Q>::max(),
             rt::Error::InvalidArgument, "%s: quant range [%d, %d] exceeds %s", op, static_cast<int>(quant_min),
             static_cast<int>(quant_max), rt::scalar_type_name(dtype));
    return dispatch<kFloatHDtypes, kSelected>(op, "input", in.dtype, [&](auto ktag) {
      using K = typename decltype(ktag)::type;
      const K* x = in.data_as<K>();
      Q* q = out.data_as<Q>();
      size_t i = 0;
#if defined(__ARM_FEATURE_MVE)
      if constexpr (std::is_same_v<K, float>) i = quantize_mve<Q>(x, q, in.numel, p);
#endif
      for (; i < in.numel; ++i) q[i] = quantize_one<Q>(x[i], p);
      return rt::Error::Ok;
    });
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_quantized_decomposed_quantize_per_tensor_out)
// (Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
rt::Error quantized_decomposed_quantize_per_tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(quantized_decomposed_quantize_per_tensor_out);
  Args a("quantized_decomposed::quantize_per_tensor.out", args, nargs);
  rt::Tensor *in, *out;
  double scale;
  int64_t zero_point, quant_min, quant_max;
  rt::ScalarType dtype;
  RT_TRY(a.count(8));
  RT_TRY(a.tensor(0, "input", in));
  RT_TRY(a.floating(1, "scale", scale));
  RT_TRY(a.integer(2, "zero_point", zero_point));
  RT_TRY(a.integer(3, "quant_min", quant_min));
  RT_TRY(a.integer(4, "quant_max", quant_max));
  RT_TRY(a.dtype(5, "dtype", dtype));
  RT_TRY(a.tensor(6, "out", out));
  RT_TRY(a.returned(7, out));
  return quantize<kSelected>(a.op(), *in, scale, zero_point, quant_min, quant_max, dtype, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_quantized_decomposed_quantize_per_tensor_Tensor_out)
// (Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out)
// scale: one Double, zero_point: one Long (ExecuTorch accepts nothing else).
rt::Error quantized_decomposed_quantize_per_tensor_Tensor_out(rt::KernelContext&, rt::Value* const* args,
                                                              size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(quantized_decomposed_quantize_per_tensor_Tensor_out);
  Args a("quantized_decomposed::quantize_per_tensor.Tensor_out", args, nargs);
  rt::Tensor *in, *scale, *zero_point, *out;
  int64_t quant_min, quant_max;
  rt::ScalarType dtype;
  RT_TRY(a.count(8));
  RT_TRY(a.tensor(0, "input", in));
  RT_TRY(a.tensor(1, "scale", scale));
  RT_TRY(a.tensor(2, "zero_point", zero_point));
  RT_TRY(a.integer(3, "quant_min", quant_min));
  RT_TRY(a.integer(4, "quant_max", quant_max));
  RT_TRY(a.dtype(5, "dtype", dtype));
  RT_TRY(a.tensor(6, "out", out));
  RT_TRY(a.returned(7, out));
  RT_CHECK(scale->dtype == rt::ScalarType::Double && scale->numel == 1, rt::Error::InvalidArgument,
           "%s: scale must be one Double, got %s with %u elements", a.op(), rt::scalar_type_name(scale->dtype),
           static_cast<unsigned>(scale->numel));
  RT_CHECK(zero_point->dtype == rt::ScalarType::Long && zero_point->numel == 1, rt::Error::InvalidArgument,
           "%s: zero_point must be one Long, got %s with %u elements", a.op(),
           rt::scalar_type_name(zero_point->dtype), static_cast<unsigned>(zero_point->numel));
  return quantize<kSelected>(a.op(), *in, scale->data_as<double>()[0], zero_point->data_as<int64_t>()[0], quant_min,
                             quant_max, dtype, *out);
}
#endif

}  // namespace kernels
