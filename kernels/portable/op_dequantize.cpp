// quantized_decomposed::dequantize_per_tensor.out / .Tensor_out, dequantize_per_channel.out
//
// Per tensor, as ExecuTorch computes it:  out = float(int32(q - int32(zero_point))) * float(scale)
// (one float multiply; a Double out gets that float widened). quant_min and
// quant_max are metadata only, as in ExecuTorch.
//
// Per channel, ExecuTorch has two formulas and so do we: int8 input with a
// Float out takes its "optimized" path, float(double(q - zp) * scale) with
// scale in double; every other dtype computes float(q - zp) * float(scale).
// A Half out (ExecuTorch's FLOATH switch: no BFloat16) rounds that float to Half; per
// channel, ExecuTorch's 1-d path converts q - zp to Half before the multiply, so it does
// here (which rounds |q - zp| > 2048).
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {
namespace {

constexpr uint32_t kOutDtypes = kFloatHDtypes;

// q - zp with int32 wrap-around (ExecuTorch subtracts in int32).
template <typename Q>
inline int32_t centered(Q q, int32_t zp) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(q)) - static_cast<uint32_t>(zp));
}

#if defined(__ARM_FEATURE_MVE)
// Widening loads of 4 quantized values into int32 lanes.
template <typename Q>
inline int32x4_t load_widened(const Q* p, mve_pred16_t tail) {
  if constexpr (std::is_same_v<Q, int8_t>) {
    return vldrbq_z_s32(p, tail);
  } else if constexpr (std::is_same_v<Q, uint8_t>) {
    return vreinterpretq_s32_u32(vldrbq_z_u32(p, tail));
  } else if constexpr (std::is_same_v<Q, int16_t>) {
    return vldrhq_z_s32(p, tail);
  } else {
    return vldrwq_z_s32(p, tail);
  }
}

// Same lanes as the scalar formula: int32 subtract, exact int->float
// conversion (round to nearest, as the scalar one), one float multiply.
template <typename Q>
void dequantize_mve(const Q* in, float* out, size_t n, int32_t zp, float scale) {
  for (size_t i = 0; i < n; i += 4) {
    const mve_pred16_t tail = vctp32q(static_cast<uint32_t>(n - i));
    const int32x4_t c = vsubq_n_s32(load_widened(in + i, tail), zp);
    vstrwq_p_f32(out + i, vmulq_n_f32(vcvtq_f32_s32(c), scale), tail);
  }
}
#endif

// Shared argument checks of both per-tensor and per-channel forms.
inline rt::Error check_common(const char* op, const rt::Tensor& in, int64_t quant_min, int64_t quant_max,
                              rt::ScalarType dtype, const Optional<rt::ScalarType>& out_dtype,
                              const rt::Tensor& out) {
  RT_TRY(check_same_shape(op, "input", in, "out", out));
  RT_CHECK(in.dtype == dtype, rt::Error::DtypeMismatch, "%s: input dtype %s != dtype argument %s", op,
           rt::scalar_type_name(in.dtype), rt::scalar_type_name(dtype));
  RT_CHECK(!out_dtype.present || out.dtype == out_dtype.value, rt::Error::DtypeMismatch,
           "%s: out dtype %s != out_dtype argument %s", op, rt::scalar_type_name(out.dtype),
           rt::scalar_type_name(out_dtype.value));
  RT_CHECK(quant_min <= quant_max, rt::Error::InvalidArgument, "%s: quant_min %d > quant_max %d", op,
           static_cast<int>(quant_min), static_cast<int>(quant_max));
  return rt::Error::Ok;
}

template <uint32_t kSelected>
rt::Error dequantize_per_tensor(const char* op, const rt::Tensor& in, double scale, int64_t zero_point,
                                int64_t quant_min, int64_t quant_max, rt::ScalarType dtype,
                                const Optional<rt::ScalarType>& out_dtype, rt::Tensor& out) {
  RT_TRY(check_common(op, in, quant_min, quant_max, dtype, out_dtype, out));
  const float scale_f = static_cast<float>(scale);
  const int32_t zp = static_cast<int32_t>(zero_point);
  return dispatch<kQuantDtypes, kSelected>(op, "input", in.dtype, [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    return dispatch<kOutDtypes, kSelected>(op, "out", out.dtype, [&](auto otag) {
      using O = typename decltype(otag)::type;
      const Q* q = in.data_as<Q>();
      O* o = out.data_as<O>();
      size_t i = 0;
#if defined(__ARM_FEATURE_MVE)
      if constexpr (std::is_same_v<O, float>) {
        dequantize_mve(q, o, in.numel, zp, scale_f);
        i = in.numel;
      }
#endif
      for (; i < in.numel; ++i) o[i] = static_cast<O>(static_cast<float>(centered(q[i], zp)) * scale_f);
      return rt::Error::Ok;
    });
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_quantized_decomposed_dequantize_per_tensor_out)
// (Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *,
//  ScalarType? out_dtype=None, Tensor(a!) out)
rt::Error quantized_decomposed_dequantize_per_tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(quantized_decomposed_dequantize_per_tensor_out);
  Args a("quantized_decomposed::dequantize_per_tensor.out", args, nargs);
  rt::Tensor *in, *out;
  double scale;
  int64_t zero_point, quant_min, quant_max;
  rt::ScalarType dtype;
  Optional<rt::ScalarType> out_dtype;
  RT_TRY(a.count(9));
  RT_TRY(a.tensor(0, "input", in));
  RT_TRY(a.floating(1, "scale", scale));
  RT_TRY(a.integer(2, "zero_point", zero_point));
  RT_TRY(a.integer(3, "quant_min", quant_min));
  RT_TRY(a.integer(4, "quant_max", quant_max));
  RT_TRY(a.dtype(5, "dtype", dtype));
  RT_TRY(a.optional_dtype(6, "out_dtype", out_dtype));
  RT_TRY(a.tensor(7, "out", out));
  RT_TRY(a.returned(8, out));
  return dequantize_per_tensor<kSelected>(a.op(), *in, scale, zero_point, quant_min, quant_max, dtype, out_dtype,
                                          *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_quantized_decomposed_dequantize_per_tensor_Tensor_out)
// (Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *,
//  ScalarType? out_dtype=None, Tensor(a!) out); scale: one Double, zero_point: one Long.
rt::Error quantized_decomposed_dequantize_per_tensor_Tensor_out(rt::KernelContext&, rt::Value* const* args,
                                                                size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(quantized_decomposed_dequantize_per_tensor_Tensor_out);
  Args a("quantized_decomposed::dequantize_per_tensor.Tensor_out", args, nargs);
  rt::Tensor *in, *scale, *zero_point, *out;
  int64_t quant_min, quant_max;
  rt::ScalarType dtype;
  Optional<rt::ScalarType> out_dtype;
  RT_TRY(a.count(9));
  RT_TRY(a.tensor(0, "input", in));
  RT_TRY(a.tensor(1, "scale", scale));
  RT_TRY(a.tensor(2, "zero_point", zero_point));
  RT_TRY(a.integer(3, "quant_min", quant_min));
  RT_TRY(a.integer(4, "quant_max", quant_max));
  RT_TRY(a.dtype(5, "dtype", dtype));
  RT_TRY(a.optional_dtype(6, "out_dtype", out_dtype));
  RT_TRY(a.tensor(7, "out", out));
  RT_TRY(a.returned(8, out));
  RT_CHECK(scale->dtype == rt::ScalarType::Double && scale->numel == 1, rt::Error::InvalidArgument,
           "%s: scale must be one Double, got %s with %u elements", a.op(), rt::scalar_type_name(scale->dtype),
           static_cast<unsigned>(scale->numel));
  RT_CHECK(zero_point->dtype == rt::ScalarType::Long && zero_point->numel == 1, rt::Error::InvalidArgument,
           "%s: zero_point must be one Long, got %s with %u elements", a.op(),
           rt::scalar_type_name(zero_point->dtype), static_cast<unsigned>(zero_point->numel));
  return dequantize_per_tensor<kSelected>(a.op(), *in, scale->data_as<double>()[0],
                                          zero_point->data_as<int64_t>()[0], quant_min, quant_max, dtype, out_dtype,
                                          *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_quantized_decomposed_dequantize_per_channel_out)
// (Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *,
//  ScalarType? out_dtype=None, Tensor(a!) out); scales: Double or Float[size(axis)], zero_points: Long or Int[size(axis)].
rt::Error quantized_decomposed_dequantize_per_channel_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(quantized_decomposed_dequantize_per_channel_out);
  Args a("quantized_decomposed::dequantize_per_channel.out", args, nargs);
  rt::Tensor *in, *scales, *zero_points, *out;
  int64_t axis, quant_min, quant_max;
  rt::ScalarType dtype;
  Optional<rt::ScalarType> out_dtype;
  RT_TRY(a.count(10));
  RT_TRY(a.tensor(0, "input", in));
  RT_TRY(a.tensor(1, "scales", scales));
  RT_TRY(a.optional_tensor(2, "zero_points", zero_points));
  RT_TRY(a.integer(3, "axis", axis));
  RT_TRY(a.integer(4, "quant_min", quant_min));
  RT_TRY(a.integer(5, "quant_max", quant_max));
  RT_TRY(a.dtype(6, "dtype", dtype));
  RT_TRY(a.optional_dtype(7, "out_dtype", out_dtype));
  RT_TRY(a.tensor(8, "out", out));
  RT_TRY(a.returned(9, out));
  const char* op = a.op();
  RT_TRY(check_common(op, *in, quant_min, quant_max, dtype, out_dtype, *out));
  RT_CHECK(in->dim > 0, rt::Error::InvalidArgument, "%s: input must have at least one dim", op);
  int d = 0;
  RT_TRY(normalize_dim(op, "axis", axis, in->dim, d));
  const DimSplit s = split_at(*in, d);
  // Double as quantized_decomposed writes them, Float as the Arm quantizer writes a convolution's weight
  // scales; a Float scale widens exactly, so both paths below compute what ExecuTorch does.
  const bool float_scales = scales->dtype == rt::ScalarType::Float;
  RT_CHECK((float_scales || scales->dtype == rt::ScalarType::Double) && scales->numel == s.size,
           rt::Error::InvalidArgument, "%s: scales must be %u Doubles or Floats, got %u %s", op,
           static_cast<unsigned>(s.size), static_cast<unsigned>(scales->numel), rt::scalar_type_name(scales->dtype));
  // Long, or Int as the Arm flow writes a bias's zero points (its int64 constants become int32).
  const bool int_zps = zero_points != nullptr && zero_points->dtype == rt::ScalarType::Int;
  RT_CHECK(zero_points == nullptr ||
               ((int_zps || zero_points->dtype == rt::ScalarType::Long) && zero_points->numel == s.size),
           rt::Error::InvalidArgument, "%s: zero_points must be %u Longs or Ints", op,
           static_cast<unsigned>(s.size));
  const double* scale_d = float_scales ? nullptr : scales->data_as<double>();
  const float* scale_f = float_scales ? scales->data_as<float>() : nullptr;
  auto scale_at = [&](size_t c) { return float_scales ? static_cast<double>(scale_f[c]) : scale_d[c]; };
  const int64_t* zps_l = zero_points != nullptr && !int_zps ? zero_points->data_as<int64_t>() : nullptr;
  const int32_t* zps_i = int_zps ? zero_points->data_as<int32_t>() : nullptr;
  const bool has_zps = zero_points != nullptr;
  auto zp_at = [&](size_t c) -> int64_t { return int_zps ? zps_i[c] : zps_l[c]; };
  return dispatch<kQuantDtypes, kSelected>(op, "input", in->dtype, [&](auto qtag) {
    using Q = typename decltype(qtag)::type;
    return dispatch<kOutDtypes, kSelected>(op, "out", out->dtype, [&](auto otag) {
      using O = typename decltype(otag)::type;
      constexpr bool kDoublePath = std::is_same_v<Q, int8_t> && std::is_same_v<O, float>;
      if constexpr (kDoublePath) {
        // ExecuTorch's int8 path refuses a zero point outside the quant range.
        for (size_t c = 0; has_zps && c < s.size; ++c) {
          RT_CHECK(zp_at(c) >= quant_min && zp_at(c) <= quant_max, rt::Error::InvalidArgument,
                   "%s: zero_points[%u] = %d is outside [%d, %d]", op, static_cast<unsigned>(c),
                   static_cast<int>(zp_at(c)), static_cast<int>(quant_min), static_cast<int>(quant_max));
        }
      }
      const Q* q = in->data_as<Q>();
      O* o = out->data_as<O>();
      for (size_t outer = 0; outer < s.outer; ++outer) {
        for (size_t c = 0; c < s.size; ++c) {
          const int64_t zp = has_zps ? zp_at(c) : 0;
          const size_t base = (outer * s.size + c) * s.inner;
          if constexpr (kDoublePath) {
            for (size_t i = 0; i < s.inner; ++i) {
              o[base + i] = static_cast<float>(static_cast<double>(q[base + i] - zp) * scale_at(c));
            }
          } else {
            const float sc = static_cast<float>(scale_at(c));
            if constexpr (std::is_same_v<O, Half>) {
              const bool one_d = in->dim == 1;
              for (size_t i = 0; i < s.inner; ++i) {
                const float d = static_cast<float>(static_cast<int32_t>(q[base + i] - zp));
                o[base + i] = O((one_d ? static_cast<float>(O(d)) : d) * sc);
              }
            } else {
              for (size_t i = 0; i < s.inner; ++i) {
                o[base + i] = static_cast<O>(static_cast<O>(q[base + i] - zp) * sc);
              }
            }
          }
        }
      }
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
