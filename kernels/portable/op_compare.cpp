// aten::{eq,ne,lt,le,gt,ge}.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out)
// aten::{eq,ne,lt,le,gt,ge}.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)
//
// out = self <op> other, 1 or 0 in out's dtype (Bool from export; ExecuTorch takes any real,
// Bool, Half or BFloat16 out). ExecuTorch's rules: the Tensor forms broadcast and compare in
// promoteTypes(self, other), except that operands of different dtypes promoting to a
// floating type compare in Float (Double with Float, Long or Bool compares in Float); the
// Scalar forms compare in promote_with_scalar(self, other) (an integral scalar is cast to an
// integral self's dtype unchecked: 300 is 44 for Char). Half and BFloat16 compare in Float.
// NaN compares false but for ne; -0.0 equals 0.0.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <typename C, Cmp kOp>
struct Compare : ScalarRun<C, Compare<C, kOp>> {
  static bool test(C x, C y) {
    if constexpr (kOp == Cmp::Eq) {
      return x == y;
    } else if constexpr (kOp == Cmp::Ne) {
      return x != y;
    } else if constexpr (kOp == Cmp::Lt) {
      return x < y;
    } else if constexpr (kOp == Cmp::Le) {
      return x <= y;
    } else if constexpr (kOp == Cmp::Gt) {
      return x > y;
    } else {
      return x >= y;
    }
  }
  C operator()(C x, C y) const { return static_cast<C>(test(x, y)); }
};

// apply_binary, with the common case on the data: self and other of the compute dtype and a
// Bool out (export's), no conversions.
template <typename C, uint32_t kSelected, Cmp kOp>
rt::Error run_compare(const char* op, const rt::Tensor& a, const rt::Tensor& b, rt::Tensor& out,
                      const StridedLoop<3>& loop) {
  constexpr ScalarType kC = dtype_of<C>();
  if (!std::is_same_v<C, bool> && in_mask(kSelected, ScalarType::Bool) && a.dtype == kC && b.dtype == kC &&
      out.dtype == ScalarType::Bool) {
    uint8_t* o = out.data_as<uint8_t>();
    const C* x = a.data_as<C>();
    const C* y = b.data_as<C>();
    loop.run([&](const size_t* off, size_t n, const size_t* step) {
      for (size_t i = 0; i < n; ++i) {
        o[off[0] + i * step[0]] = Compare<C, kOp>::test(x[off[1] + i * step[1]], y[off[2] + i * step[2]]) ? 1 : 0;
      }
    });
    return rt::Error::Ok;
  }
  return apply_binary<C, kSelected>(op, a, b, out, loop, Compare<C, kOp>{});
}

// (self, other: Tensor, out, return)
template <uint32_t kSelected, Cmp kOp>
rt::Error tensor_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *other, *out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  ScalarType common = self->dtype;
  RT_CHECK(promote_types(self->dtype, other->dtype, common), rt::Error::DtypeMismatch,
           "%s: cannot promote %s with %s", op, rt::scalar_type_name(self->dtype),
           rt::scalar_type_name(other->dtype));
  if (is_floating(common) && self->dtype != other->dtype) common = ScalarType::Float;
  StridedLoop<3> loop;
  RT_TRY(binary_loop(op, *self, *other, *out, loop));
  const ScalarType compute = compute_type(common);
  return dispatch<kRealBoolDtypes, with_promoted_dtypes(kSelected)>(op, "the computation", compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    return run_compare<C, kSelected, kOp>(op, *self, *other, *out, loop);
  });
}

// (self, other: Scalar, out, return)
template <uint32_t kSelected, Cmp kOp>
rt::Error scalar_form(const char* op, rt::Value* const* args, size_t nargs) {
  Args a(op, args, nargs);
  rt::Tensor *self, *out;
  Scalar other;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "other", other));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const ScalarType compute = compute_type(promote_with_scalar(self->dtype, other));
  return dispatch<kRealBoolDtypes, with_promoted_dtypes(kSelected)>(op, "the computation", compute, [&](auto tag) {
    using C = typename decltype(tag)::type;
    const ScalarTensor<C> b(scalar_cast<C>(other));  // of a dtype the build may not have selected
    StridedLoop<3> loop;
    RT_TRY(binary_loop(op, *self, b.t, *out, loop));
    return run_compare<C, kSelected | bit(dtype_of<C>()), kOp>(op, *self, b.t, *out, loop);
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_eq_Tensor_out)
rt::Error aten_eq_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_eq_Tensor_out), Cmp::Eq>("aten::eq.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_eq_Scalar_out)
rt::Error aten_eq_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_eq_Scalar_out), Cmp::Eq>("aten::eq.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_ne_Tensor_out)
rt::Error aten_ne_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_ne_Tensor_out), Cmp::Ne>("aten::ne.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_ne_Scalar_out)
rt::Error aten_ne_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_ne_Scalar_out), Cmp::Ne>("aten::ne.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_lt_Tensor_out)
rt::Error aten_lt_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_lt_Tensor_out), Cmp::Lt>("aten::lt.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_lt_Scalar_out)
rt::Error aten_lt_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_lt_Scalar_out), Cmp::Lt>("aten::lt.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_le_Tensor_out)
rt::Error aten_le_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_le_Tensor_out), Cmp::Le>("aten::le.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_le_Scalar_out)
rt::Error aten_le_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_le_Scalar_out), Cmp::Le>("aten::le.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_gt_Tensor_out)
rt::Error aten_gt_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_gt_Tensor_out), Cmp::Gt>("aten::gt.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_gt_Scalar_out)
rt::Error aten_gt_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_gt_Scalar_out), Cmp::Gt>("aten::gt.Scalar_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_ge_Tensor_out)
rt::Error aten_ge_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return tensor_form<KERNEL_DTYPES(aten_ge_Tensor_out), Cmp::Ge>("aten::ge.Tensor_out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_ge_Scalar_out)
rt::Error aten_ge_Scalar_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return scalar_form<KERNEL_DTYPES(aten_ge_Scalar_out), Cmp::Ge>("aten::ge.Scalar_out", args, nargs);
}
#endif

}  // namespace kernels
