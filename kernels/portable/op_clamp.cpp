// aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out)
// aten::clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out)
// aten::hardtanh.out(Tensor self, Scalar min_val=-1, Scalar max_val=1, *, Tensor(a!) out)
// aten::relu.out(Tensor self, *, Tensor(a!) out)
//
// out = min(max(x, min), max) with ExecuTorch's NaN rule (a NaN operand wins, x first) and
// std::max/std::min otherwise (so max(-0.0, 0.0) is -0.0). ExecuTorch's dtype rules:
//   clamp.out        common = promote_type_with_scalar(self, min, max), which must be out's
//                    dtype; a bound outside out's range is refused (floats: finite ones).
//                    Half and BFloat16 compute in Float (a bound is a float, the result
//                    rounds to out's dtype).
//   clamp.Tensor_out common = promoteTypes(self, min, max), castable to out; broadcasts.
//   hardtanh.out     self's dtype = out's (no Bool), Half and BFloat16 computed in that dtype
//                    (a result is an operand, bit for bit); each bound cast to it, refused when it
//                    overflows (c10::overflows: an integer bound may wrap into an unsigned
//                    dtype, e.g. -5 -> 251 for Byte; a float bound truncates toward zero).
//   relu.out         self's dtype = out's (no Bool); x < 0 -> 0 (NaN and -0.0 stay).
// Helium: float32 and int8 runs with scalar bounds (compare-and-select for floats, which is
// exactly the scalar path, signed zeros and NaN included).
#include <math.h>
#include <stdint.h>

#include <limits>

#include "kernels/args.h"
#include "kernels/elementwise.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

// ExecuTorch's max_override / min_override.
// Half and BFloat16 (hardtanh, relu) compare through float and return an operand unchanged.
template <typename C>
C max_of(C a, C b) {
  if constexpr (is_float_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <typename C>
C min_of(C a, C b) {
  if constexpr (is_float_v<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

// x clamped to [lo, hi], either bound optional.
template <typename C>
struct Clamp : UnaryScalarRun<C, Clamp<C>> {
  bool has_lo, has_hi;
  C lo, hi;

  C operator()(C x) const {
    if (has_lo) x = max_of(x, lo);
    if (has_hi) x = min_of(x, hi);
    return x;
  }

  void run(C* o, const C* x, size_t n) const {
#if defined(__ARM_FEATURE_MVE)
    if (run_mve(o, x, n)) return;
#endif
    UnaryScalarRun<C, Clamp<C>>::run(o, x, n);
  }

#if defined(__ARM_FEATURE_MVE)
  // False when this C or these bounds have no vector form (a NaN bound: every result is
  // that NaN, which the scalar path gives).
  bool run_mve(C* o, const C* x, size_t n) const {
#if KERNELS_MVE_FLOAT
    if constexpr (std::is_same_v<C, float>) {
      if ((has_lo && isnan(lo)) || (has_hi && isnan(hi))) return false;
      const float32x4_t vlo = vdupq_n_f32(has_lo ? lo : 0.0f);
      const float32x4_t vhi = vdupq_n_f32(has_hi ? hi : 0.0f);
      // max(v, lo) = v < lo ? lo : v; min(v, hi) = hi < v ? hi : v, a NaN v staying. MVE's
      // "lt" is "less than or unordered" (true for NaN), "gt" is ordered: compare with gt.
      auto step = [&](float32x4_t v) {
        if (has_lo) v = vpselq_f32(vlo, v, vcmpgtq_f32(vlo, v));
        if (has_hi) v = vpselq_f32(vhi, v, vcmpgtq_f32(v, vhi));
        return v;
      };
      for (size_t k = n / 4; k != 0; --k) {
        vst1q_f32(o, step(vld1q_f32(x)));
        x += 4;
        o += 4;
      }
      if (n % 4 != 0) {
        const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n % 4));
        vstrwq_p_f32(o, step(vldrwq_z_f32(x, p)), p);
      }
      return true;
    }
#endif
    if constexpr (std::is_same_v<C, int8_t>) {
      const int8x16_t vlo = vdupq_n_s8(has_lo ? lo : INT8_MIN);
      const int8x16_t vhi = vdupq_n_s8(has_hi ? hi : INT8_MAX);
      for (size_t k = n / 16; k != 0; --k) {
        vst1q_s8(o, vminq_s8(vmaxq_s8(vld1q_s8(x), vlo), vhi));
        x += 16;
        o += 16;
      }
      if (n % 16 != 0) {
        const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n % 16));
        vstrbq_p_s8(o, vminq_s8(vmaxq_s8(vldrbq_z_s8(x, p), vlo), vhi), p);
      }
      return true;
    }
    return false;
  }
#endif
};

// clamp.Tensor: the bounds are elements of the min and max tensors.
template <typename C>
struct ClampTensor {
  bool has_lo, has_hi;
  C operator()(C x, C lo, C hi) const {
    if (has_lo) x = max_of(x, lo);
    if (has_hi) x = min_of(x, hi);
    return x;
  }
};

// Operand names for failures.
inline constexpr const char* kNames[3] = {"self", "min", "max"};

// clamp.out's check_bounds: a bound must lie in out's range (integral out) or, when finite,
// in its float range (floating out).
inline rt::Error check_clamp_bound(const char* op, const char* name, const Scalar& v, ScalarType out) {
  bool fits = true;
  if (is_integral(out)) {
    const int64_t i = v.is_floating() ? convert<int64_t>(v.d) : v.to_int();
    visit<kIntDtypes>(out, [&](auto tag) {
      using T = typename decltype(tag)::type;
      fits = i >= static_cast<int64_t>(std::numeric_limits<T>::lowest()) &&
             i <= static_cast<int64_t>(std::numeric_limits<T>::max());
    });
  } else if (out != ScalarType::Double) {
    const double max = out == ScalarType::Float       ? static_cast<double>(std::numeric_limits<float>::max())
                       : out == ScalarType::Half      ? static_cast<double>(static_cast<float>(Half::max()))
                                                      : static_cast<double>(static_cast<float>(BFloat16::max()));
    const double d = v.to_double();
    fits = !isfinite(d) || (d >= -max && d <= max);
  }
  RT_CHECK(fits, rt::Error::InvalidArgument, "%s: %s is out of the range of out's dtype %s", op, name,
           rt::scalar_type_name(out));
  return rt::Error::Ok;
}

// Clamps self into out (same shape) through the compute type C.
template <uint32_t kSupported, uint32_t kSelected, typename MakeClamp>
rt::Error clamp_same_dtype(const char* op, const rt::Tensor& self, rt::Tensor& out, const MakeClamp& make) {
  RT_TRY(check_same_dtype(op, "self", self, "out", out));
  RT_TRY(check_same_shape(op, "self", self, "out", out));
  return dispatch<kSupported, kSelected>(op, "self", self.dtype, [&](auto tag) {
    using C = typename decltype(tag)::type;
    Clamp<C> f{};
    RT_TRY(make(f));
    return apply_unary<C, kSelected>(op, self, out, f);
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_clamp_out)
rt::Error aten_clamp_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_clamp_out);
  Args a("aten::clamp.out", args, nargs);
  rt::Tensor *self, *out;
  Optional<Scalar> min, max;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_scalar(1, "min", min));
  RT_TRY(a.optional_scalar(2, "max", max));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  const bool has_lo = min.present, has_hi = max.present;
  const Scalar& lo = min.value;
  const Scalar& hi = max.value;
  RT_CHECK(has_lo || has_hi, rt::Error::InvalidArgument, "%s: at least one of min and max must be given", op);
  ScalarType common = self->dtype;
  if (has_lo) common = promote_with_scalar(common, lo);
  if (has_hi) common = promote_with_scalar(common, hi);
  RT_CHECK(common == out->dtype, rt::Error::DtypeMismatch, "%s: result dtype %s != out dtype %s", op,
           rt::scalar_type_name(common), rt::scalar_type_name(out->dtype));
  if (has_lo) RT_TRY(check_clamp_bound(op, "min", lo, out->dtype));
  if (has_hi) RT_TRY(check_clamp_bound(op, "max", hi, out->dtype));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    Clamp<C> f{};
    f.has_lo = has_lo;
    f.has_hi = has_hi;
    f.lo = has_lo ? scalar_cast<C>(lo) : C(0);
    f.hi = has_hi ? scalar_cast<C>(hi) : C(0);
    return apply_unary<C, kSelected>(op, *self, *out, f);
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_clamp_Tensor_out)
rt::Error aten_clamp_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_clamp_Tensor_out);
  Args a("aten::clamp.Tensor_out", args, nargs);
  rt::Tensor *self, *lo, *hi, *out;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_tensor(1, "min", lo));
  RT_TRY(a.optional_tensor(2, "max", hi));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(lo != nullptr || hi != nullptr, rt::Error::InvalidArgument,
           "%s: at least one of min and max must be given", op);
  ScalarType common = self->dtype;
  const rt::Tensor* const bounds[2] = {lo, hi};
  for (const rt::Tensor* t : bounds) {
    if (t == nullptr) continue;
    const ScalarType before = common;
    RT_CHECK(promote_types(before, t->dtype, common), rt::Error::DtypeMismatch, "%s: cannot promote %s with %s",
             op, rt::scalar_type_name(before), rt::scalar_type_name(t->dtype));
  }
  RT_CHECK(can_cast(common, out->dtype), rt::Error::DtypeMismatch, "%s: result dtype %s cannot be cast to out %s",
           op, rt::scalar_type_name(common), rt::scalar_type_name(out->dtype));
  // As in ExecuTorch, a missing bound is self (broadcasts trivially, never read).
  const rt::Tensor& min_t = lo != nullptr ? *lo : *self;
  const rt::Tensor& max_t = hi != nullptr ? *hi : *self;
  StridedLoop<4> loop;
  RT_TRY(ternary_loop(op, *self, min_t, max_t, *out, loop));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_ternary<C, kSelected>(op, *self, min_t, max_t, *out, loop, kNames,
                                       ClampTensor<C>{lo != nullptr, hi != nullptr});
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_hardtanh_out)
rt::Error aten_hardtanh_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_hardtanh_out);
  Args a("aten::hardtanh.out", args, nargs);
  rt::Tensor *self, *out;
  Scalar lo, hi;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "min_val", lo));
  RT_TRY(a.scalar(2, "max_val", hi));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  return clamp_same_dtype<kRealHBF16Dtypes, kSelected>(op, *self, *out, [&](auto& f) {
    using C = decltype(f.lo);
    f.has_lo = f.has_hi = true;
    RT_CHECK(scalar_cast_checked<C>(lo, f.lo), rt::Error::InvalidArgument, "%s: min_val overflows dtype %s", op,
             rt::scalar_type_name(self->dtype));
    RT_CHECK(scalar_cast_checked<C>(hi, f.hi), rt::Error::InvalidArgument, "%s: max_val overflows dtype %s", op,
             rt::scalar_type_name(self->dtype));
    return rt::Error::Ok;
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_relu_out)
rt::Error aten_relu_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_relu_out);
  Args a("aten::relu.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  // isnan(x) || x >= 0 ? x : 0 is max(x, 0) with x first: a NaN x stays, -0.0 stays.
  return clamp_same_dtype<kRealHBF16Dtypes, kSelected>(a.op(), *self, *out, [](auto& f) {
    f.has_lo = true;
    f.has_hi = false;
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
