// Element-wise kernels (add, sub, mul, div; where, clamp; unary maps): broadcasting,
// ExecuTorch's dtype rules, and one loop skeleton with a fast path per run.
//
// ExecuTorch computes in a "compute" dtype C (the promoted dtype of the
// operands; Float for Half/BFloat16): every operand element is converted to
// C, the operation runs in C (integers wrap), and the result is converted to
// out's dtype. An operation is a functor with
//   C operator()(C x, C y) const                      element by element
//   void run(C* o, const C* x, size_t sx, const C* y, size_t sy, size_t n) const
// where run() is a contiguous run (strides 0 or 1) and may use Helium.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/broadcast.h"
#include "kernels/convert.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {

// Integer arithmetic that wraps (in C's width) instead of overflowing; plain
// arithmetic for floating types (Half and BFloat16: c10's, rounding each result to the
// type); Bool computes in int and tests non-zero.
template <typename C>
struct Arith {
  using U = std::conditional_t<(sizeof(C) > 4), uint64_t, uint32_t>;
  static C add(C x, C y) {
    if constexpr (is_float_v<C>) {
      return x + y;
    } else if constexpr (std::is_same_v<C, bool>) {
      return (static_cast<int>(x) + static_cast<int>(y)) != 0;
    } else {
      return static_cast<C>(static_cast<U>(x) + static_cast<U>(y));
    }
  }
  static C sub(C x, C y) {
    if constexpr (is_float_v<C>) {
      return x - y;
    } else if constexpr (std::is_same_v<C, bool>) {
      return (static_cast<int>(x) - static_cast<int>(y)) != 0;
    } else {
      return static_cast<C>(static_cast<U>(x) - static_cast<U>(y));
    }
  }
  static C mul(C x, C y) {
    if constexpr (is_float_v<C>) {
      return x * y;
    } else if constexpr (std::is_same_v<C, bool>) {
      return x && y;
    } else {
      return static_cast<C>(static_cast<U>(x) * static_cast<U>(y));
    }
  }
};

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define KERNELS_MVE_FLOAT 1
// A float run on Helium: four lanes per step, stride-0 operands broadcast
// from a register, a predicated tail. vop(float32x4_t, float32x4_t).
template <bool kXStep, bool kYStep, typename VOp>
void run_f32_lanes(const VOp& vop, float* o, const float* x, const float* y, size_t n) {
  const float32x4_t xb = vdupq_n_f32(*x);
  const float32x4_t yb = vdupq_n_f32(*y);
  // A counted loop with pointer bumps: GCC turns it into a low-overhead loop
  // with post-incremented loads and stores.
  for (size_t k = n / 4; k != 0; --k) {
    const float32x4_t vx = kXStep ? vld1q_f32(x) : xb;
    const float32x4_t vy = kYStep ? vld1q_f32(y) : yb;
    vst1q_f32(o, vop(vx, vy));
    x += kXStep ? 4 : 0;
    y += kYStep ? 4 : 0;
    o += 4;
  }
  if (n % 4 != 0) {
    const mve_pred16_t p = vctp32q(static_cast<uint32_t>(n % 4));
    const float32x4_t vx = kXStep ? vldrwq_z_f32(x, p) : xb;
    const float32x4_t vy = kYStep ? vldrwq_z_f32(y, p) : yb;
    vstrwq_p_f32(o, vop(vx, vy), p);
  }
}

// False when the strides are not a contiguous/broadcast pattern.
template <typename VOp>
bool run_f32_mve(const VOp& vop, float* o, const float* x, size_t sx, const float* y, size_t sy, size_t n) {
  if (n == 0) return true;
  if (sx == 1 && sy == 1) {
    run_f32_lanes<true, true>(vop, o, x, y, n);
  } else if (sx == 1 && sy == 0) {
    run_f32_lanes<true, false>(vop, o, x, y, n);
  } else if (sx == 0 && sy == 1) {
    run_f32_lanes<false, true>(vop, o, x, y, n);
  } else {
    return false;
  }
  return true;
}
#else
#define KERNELS_MVE_FLOAT 0
#endif

// The scalar run: specialised for the common stride patterns so the compiler
// sees plain loops.
template <typename C, typename F>
void run_elements(const F& f, C* o, const C* x, size_t sx, const C* y, size_t sy, size_t n) {
  if (sx == 1 && sy == 1) {
    for (size_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
  } else if (sx == 1 && sy == 0) {
    const C yv = *y;
    for (size_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
  } else if (sx == 0 && sy == 1) {
    const C xv = *x;
    for (size_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
  } else {
    for (size_t i = 0; i < n; ++i) o[i] = f(x[i * sx], y[i * sy]);
  }
}

// Base for functors without a vector form.
template <typename C, typename Derived>
struct ScalarRun {
  void run(C* o, const C* x, size_t sx, const C* y, size_t sy, size_t n) const {
    run_elements<C>(static_cast<const Derived&>(*this), o, x, sx, y, sy, n);
  }
};

// out = f(a, b) over the broadcast shape, everything converted through C.
// `loop` comes from binary_loop(). When a, b and out are all C (not bool: a Bool byte is
// read through load_as), runs go to f.run() directly; otherwise elements are converted
// one by one.
template <typename C, uint32_t kSelected, typename F>
rt::Error apply_binary(const char* op, const rt::Tensor& a, const rt::Tensor& b, rt::Tensor& out,
                       const StridedLoop<3>& loop, const F& f) {
  constexpr ScalarType kC = dtype_of<C>();
  if (!std::is_same_v<C, bool> && a.dtype == kC && b.dtype == kC && out.dtype == kC) {
    // out is contiguous, so its innermost run always has step 1 (size-1 dims
    // were collapsed away).
    C* o = out.data_as<C>();
    const C* x = a.data_as<C>();
    const C* y = b.data_as<C>();
    loop.run([&](const size_t* off, size_t n, const size_t* step) {
      f.run(o + off[0], x + off[1], step[1], y + off[2], step[2], n);
    });
    return rt::Error::Ok;
  }
  const LoadFn<C> la = load_fn<C, kSelected>(a.dtype);
  const LoadFn<C> lb = load_fn<C, kSelected>(b.dtype);
  const StoreFn<C> so = store_fn<C, kSelected>(out.dtype);
  if (la == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "self", a.dtype);
  if (lb == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "other", b.dtype);
  if (so == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "out", out.dtype);
  loop.run([&](const size_t* off, size_t n, const size_t* step) {
    for (size_t i = 0; i < n; ++i) {
      so(out.data, off[0] + i * step[0], f(la(a.data, off[1] + i * step[1]), lb(b.data, off[2] + i * step[2])));
    }
  });
  return rt::Error::Ok;
}

// out = f(a, b, c) over the broadcast shape (where, clamp.Tensor), everything converted
// through C; `loop` comes from ternary_loop(), `names` name a, b and c in failures. When
// every operand is C the runs index the data directly.
template <typename C, uint32_t kSelected, typename F>
rt::Error apply_ternary(const char* op, const rt::Tensor& a, const rt::Tensor& b, const rt::Tensor& c,
                        rt::Tensor& out, const StridedLoop<4>& loop, const char* const (&names)[3], const F& f) {
  constexpr ScalarType kC = dtype_of<C>();
  if (!std::is_same_v<C, bool> && a.dtype == kC && b.dtype == kC && c.dtype == kC && out.dtype == kC) {
    C* o = out.data_as<C>();
    const C* x = a.data_as<C>();
    const C* y = b.data_as<C>();
    const C* z = c.data_as<C>();
    loop.run([&](const size_t* off, size_t n, const size_t* step) {
      C* on = o + off[0];
      const C* xn = x + off[1];
      const C* yn = y + off[2];
      const C* zn = z + off[3];
      for (size_t i = 0; i < n; ++i) on[i] = f(xn[i * step[1]], yn[i * step[2]], zn[i * step[3]]);
    });
    return rt::Error::Ok;
  }
  const LoadFn<C> la = load_fn<C, kSelected>(a.dtype);
  const LoadFn<C> lb = load_fn<C, kSelected>(b.dtype);
  const LoadFn<C> lc = load_fn<C, kSelected>(c.dtype);
  const StoreFn<C> so = store_fn<C, kSelected>(out.dtype);
  if (la == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, names[0], a.dtype);
  if (lb == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, names[1], b.dtype);
  if (lc == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, names[2], c.dtype);
  if (so == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "out", out.dtype);
  loop.run([&](const size_t* off, size_t n, const size_t* step) {
    for (size_t i = 0; i < n; ++i) {
      so(out.data, off[0] + i * step[0],
         f(la(a.data, off[1] + i * step[1]), lb(b.data, off[2] + i * step[2]), lc(c.data, off[3] + i * step[3])));
    }
  });
  return rt::Error::Ok;
}

// out = f(self) over same-shape tensors, through C (ExecuTorch's unitensor ops: clamp,
// div.Scalar). A functor has C operator()(C x) const and void run(C* o, const C* x, size_t n)
// const (a contiguous run, may use Helium; derive from UnaryScalarRun for none); run() gets
// the data when self and out are both C, otherwise elements are converted one by one.
template <typename C, typename Derived>
struct UnaryScalarRun {
  void run(C* o, const C* x, size_t n) const {
    const Derived& f = static_cast<const Derived&>(*this);
    for (size_t i = 0; i < n; ++i) o[i] = f(x[i]);
  }
};

template <typename C, uint32_t kSelected, typename F>
rt::Error apply_unary(const char* op, const rt::Tensor& self, rt::Tensor& out, const F& f) {
  constexpr ScalarType kC = dtype_of<C>();
  if (!std::is_same_v<C, bool> && self.dtype == kC && out.dtype == kC) {
    f.run(out.data_as<C>(), self.data_as<C>(), self.numel);
    return rt::Error::Ok;
  }
  const LoadFn<C> load = load_fn<C, kSelected>(self.dtype);
  const StoreFn<C> store = store_fn<C, kSelected>(out.dtype);
  if (load == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "self", self.dtype);
  if (store == nullptr) return dtype_unavailable(kRealHBBF16Dtypes, op, "out", out.dtype);
  for (size_t i = 0; i < self.numel; ++i) store(out.data, i, f(load(self.data, i)));
  return rt::Error::Ok;
}

// ExecuTorch's unary_ufunc_realhbbf16_to_floathbf16 (exp, sigmoid): self of any real, Bool,
// Half or BFloat16 dtype, out floating (Half and BFloat16 too); fn(v) runs in double for a
// Double self and in float otherwise, and its result is converted to out's dtype (a double
// result to Half through float, as static_cast<c10::Half> does). fn is generic (called with float or double).
template <uint32_t kSelected, typename Fn>
rt::Error apply_unary_to_floating(const char* op, const rt::Tensor& self, rt::Tensor& out, const Fn& fn) {
  RT_CHECK(self.numel == out.numel, rt::Error::Internal, "%s: self and out sizes differ", op);
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self.dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    using C = std::conditional_t<std::is_same_v<In, double>, double, float>;
    return dispatch<kFloatHBF16Dtypes, kSelected>(op, "out", out.dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      Out* y = out.data_as<Out>();
      for (size_t i = 0; i < self.numel; ++i) y[i] = convert<Out>(fn(load_as<C, In>(self.data, i)));
      return rt::Error::Ok;
    });
  });
}

// A whole `op(Tensor self, *, Tensor(a!) out)` kernel of that kind (exp, sin, cos, sigmoid):
// the call's arguments checked, then apply_unary_to_floating.
template <uint32_t kSelected, typename Fn>
rt::Error unary_to_floating_kernel(const char* name, rt::Value* const* args, size_t nargs, const Fn& fn) {
  Args a(name, args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  RT_TRY(check_same_shape(a.op(), "self", *self, "out", *out));
  return apply_unary_to_floating<kSelected>(a.op(), *self, *out, fn);
}

// The dtype checks of ExecuTorch's add/sub/mul (Tensor, Tensor) -> out:
// common = promoteTypes(a, b), castable to out; returns the compute dtype.
inline rt::Error binary_compute_type(const char* op, const rt::Tensor& a, const rt::Tensor& b,
                                     const rt::Tensor& out, ScalarType& common, ScalarType& compute) {
  common = compute = a.dtype;
  RT_CHECK(promote_types(a.dtype, b.dtype, common), rt::Error::DtypeMismatch, "%s: cannot promote %s with %s", op,
           rt::scalar_type_name(a.dtype), rt::scalar_type_name(b.dtype));
  RT_CHECK(can_cast(common, out.dtype), rt::Error::DtypeMismatch, "%s: result dtype %s cannot be cast to out %s",
           op, rt::scalar_type_name(common), rt::scalar_type_name(out.dtype));
  compute = compute_type(common);
  return rt::Error::Ok;
}

// (Tensor, Scalar) -> out: common = promote_type_with_scalar, which must be
// out's dtype exactly.
inline rt::Error scalar_compute_type(const char* op, const rt::Tensor& a, const Scalar& b, const rt::Tensor& out,
                                     ScalarType& common, ScalarType& compute) {
  compute = a.dtype;
  common = promote_with_scalar(a.dtype, b);
  RT_CHECK(common == out.dtype, rt::Error::DtypeMismatch, "%s: result dtype %s != out dtype %s", op,
           rt::scalar_type_name(common), rt::scalar_type_name(out.dtype));
  compute = compute_type(common);
  return rt::Error::Ok;
}

// The compute dtypes a selective build compiles for a kernel whose compute dtype can lie
// outside its tensors' (selected) dtypes: compute_type's Float for Half and BFloat16, Float
// for a float Scalar with an integral or Bool tensor (and for the comparisons' mixed
// floating operands, Double with another dtype), Long for an integral Scalar with a Bool
// tensor (promote_with_scalar).
constexpr uint32_t with_promoted_dtypes(uint32_t selected) {
  uint32_t m = with_compute_dtypes(selected);
  if ((selected & (kIntDtypes | bit(ScalarType::Bool) | bit(ScalarType::Double))) != 0u) m |= bit(ScalarType::Float);
  if ((selected & bit(ScalarType::Bool)) != 0u) m |= bit(ScalarType::Long);
  return m;
}

// A 0-d tensor of dtype C holding one value, to run (Tensor, Scalar) forms
// through the (Tensor, Tensor) machinery.
template <typename C>
struct ScalarTensor {
  C value;
  rt::Tensor t;
  explicit ScalarTensor(C v) : value(v), t() {
    t.data = &value;
    t.numel = 1;
    t.nbytes = sizeof(C);
    t.dtype = dtype_of<C>();
    t.dim = 0;
  }
};

}  // namespace kernels
