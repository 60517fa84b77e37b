// aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//
// Same dtype rules as add (see op_add.cpp, elementwise.h); Bool multiplies as
// logical and, integers wrap.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

template <typename C>
struct Mul {
  C operator()(C x, C y) const { return Arith<C>::mul(x, y); }
  void run(C* o, const C* x, size_t sx, const C* y, size_t sy, size_t n) const {
#if KERNELS_MVE_FLOAT
    if constexpr (std::is_same_v<C, float>) {
      if (run_f32_mve([](float32x4_t u, float32x4_t v) { return vmulq_f32(u, v); }, o, x, sx, y, sy, n)) return;
    }
#endif
    run_elements<C>(*this, o, x, sx, y, sy, n);
  }
};

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_mul_out)
rt::Error aten_mul_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_mul_out);
  Args a("aten::mul.out", args, nargs);
  rt::Tensor *self, *other, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  ScalarType common, compute;
  RT_TRY(binary_compute_type(op, *self, *other, *out, common, compute));
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, *self, *other, *out, loop));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_binary<C, kSelected>(op, *self, *other, *out, loop, Mul<C>{});
  });
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_mul_Scalar_out)
rt::Error aten_mul_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_mul_Scalar_out);
  Args a("aten::mul.Scalar_out", args, nargs);
  rt::Tensor *self, *out;
  Scalar other;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  ScalarType common, compute;
  RT_TRY(scalar_compute_type(op, *self, other, *out, common, compute));
  return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const ScalarTensor<C> b(scalar_cast<C>(other));
    StridedLoop<3> loop;
    RT_TRY(binary_loop(op, *self, b.t, *out, loop));
    return apply_binary<C, kSelected>(op, *self, b.t, *out, loop, Mul<C>{});
  });
}
#endif

}  // namespace kernels
