// aten::sign.out(Tensor self, *, Tensor(a!) out)
//
// out = -1, 0 or 1 by self's sign, in self's dtype (out must have it); NaN stays NaN, both
// zeros give 0; Bool is copied. ExecuTorch's rules; export makes it of x.sign().
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

template <typename C>
struct Sign : UnaryScalarRun<C, Sign<C>> {
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return x;
    } else {
      if constexpr (is_float_v<C>) {
        if (x != x) return x;
      }
      return static_cast<C>(static_cast<int>(x > C(0)) - static_cast<int>(x < C(0)));
    }
  }
};

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sign_out)
rt::Error aten_sign_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_sign_out);
  Args a("aten::sign.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using C = typename decltype(tag)::type;
    return apply_unary<C, kSelected>(op, *self, *out, Sign<C>{});
  });
}
#endif

}  // namespace kernels
