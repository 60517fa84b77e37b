// aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)        out = self + alpha * other
// aten::add.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
// aten::sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)        out = self - alpha * other
// aten::sub.Scalar_out(Tensor self, Scalar other, Scalar alpha=1, *, Tensor(a!) out)
//
// ExecuTorch's rules (see elementwise.h): Tensor forms broadcast and compute
// in promoteTypes(self, other), which must cast to out; Scalar forms compute
// in promote_type_with_scalar(self, other), which ExecuTorch 1.5.1 requires
// to be self's dtype (an int tensor + 2.5 fails there, unlike mul.Scalar) and
// out's, and add alpha * other computed once. alpha must cast to the common
// dtype (no float alpha for integers). Integers wrap. sub refuses Bool.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

// x + alpha * y, or x - alpha * y.
template <typename C, bool kSub>
struct AddScaled {
  C alpha;
  C operator()(C x, C y) const {
    const C t = Arith<C>::mul(alpha, y);
    return kSub ? Arith<C>::sub(x, t) : Arith<C>::add(x, t);
  }
  void run(C* o, const C* x, size_t sx, const C* y, size_t sy, size_t n) const {
#if KERNELS_MVE_FLOAT
    if constexpr (std::is_same_v<C, float>) {
      const float a = alpha;
      bool done;
      if (a == 1.0f) {
        done = kSub ? run_f32_mve([](float32x4_t u, float32x4_t v) { return vsubq_f32(u, v); }, o, x, sx, y, sy, n)
                    : run_f32_mve([](float32x4_t u, float32x4_t v) { return vaddq_f32(u, v); }, o, x, sx, y, sy, n);
      } else {
        done = run_f32_mve(
            [a](float32x4_t u, float32x4_t v) {
              const float32x4_t t = vmulq_n_f32(v, a);
              return kSub ? vsubq_f32(u, t) : vaddq_f32(u, t);
            },
            o, x, sx, y, sy, n);
      }
      if (done) return;
    }
#endif
    run_elements<C>(*this, o, x, sx, y, sy, n);
  }
};

template <uint32_t kSelected, bool kSub>
rt::Error check_common(const char* op, ScalarType common, const Scalar& alpha) {
  RT_CHECK(!(kSub && common == ScalarType::Bool), rt::Error::DtypeMismatch,
           "%s: subtraction of Bool tensors is not supported", op);
  RT_CHECK(alpha_fits(alpha, common), rt::Error::InvalidArgument, "%s: alpha of type %s does not fit dtype %s", op,
           rt::scalar_type_name(scalar_dtype(alpha)), rt::scalar_type_name(common));
  return rt::Error::Ok;
}

template <uint32_t kSelected, bool kSub>
rt::Error add_tensor(const char* op, const rt::Tensor& a, const rt::Tensor& b, const Scalar& alpha,
                     rt::Tensor& out) {
  ScalarType common, compute;
  RT_TRY(binary_compute_type(op, a, b, out, common, compute));
  RT_TRY((check_common<kSelected, kSub>(op, common, alpha)));
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, a, b, out, loop));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    C al;
    RT_CHECK(scalar_to<C>(alpha, al), rt::Error::InvalidArgument, "%s: alpha does not fit %s", op,
             rt::scalar_type_name(compute));
    return apply_binary<C, kSelected>(op, a, b, out, loop, AddScaled<C, kSub>{al});
  });
}

template <uint32_t kSelected, bool kSub>
rt::Error add_scalar(const char* op, const rt::Tensor& a, const Scalar& b, const Scalar& alpha, rt::Tensor& out) {
  ScalarType common, compute;
  RT_TRY(scalar_compute_type(op, a, b, out, common, compute));
  RT_CHECK(common == a.dtype, rt::Error::DtypeMismatch, "%s: a %s scalar would promote self's dtype %s to %s", op,
           rt::scalar_type_name(scalar_dtype(b)), rt::scalar_type_name(a.dtype), rt::scalar_type_name(common));
  RT_TRY((check_common<kSelected, kSub>(op, common, alpha)));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    C al;
    RT_CHECK(scalar_to<C>(alpha, al), rt::Error::InvalidArgument, "%s: alpha does not fit %s", op,
             rt::scalar_type_name(compute));
    const ScalarTensor<C> other(Arith<C>::mul(al, scalar_cast<C>(b)));
    StridedLoop<3> loop;
    RT_TRY(binary_loop(op, a, other.t, out, loop));
    return apply_binary<C, kSelected>(op, a, other.t, out, loop, AddScaled<C, kSub>{C(1)});
  });
}

// (self, other: Tensor, alpha, out, return)
template <uint32_t kSelected, bool kSub>
rt::Error tensor_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *other, *out;
  Scalar alpha;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.scalar(2, "alpha", alpha));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  return add_tensor<kSelected, kSub>(op, *self, *other, alpha, *out);
}

// (self, other: Scalar, alpha, out, return)
template <uint32_t kSelected, bool kSub>
rt::Error scalar_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *out;
  Scalar other, alpha;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.scalar(2, "alpha", alpha));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  return add_scalar<kSelected, kSub>(op, *self, other, alpha, *out);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_add_out)
rt::Error aten_add_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_add_out), false>("aten::add.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_add_Scalar_out)
rt::Error aten_add_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_add_Scalar_out), false>("aten::add.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sub_out)
rt::Error aten_sub_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_sub_out), true>("aten::sub.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sub_Scalar_out)
rt::Error aten_sub_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_sub_Scalar_out), true>("aten::sub.Scalar_out", args, nargs);
}
#endif

}  // namespace kernels
