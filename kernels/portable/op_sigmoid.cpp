// aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
//
// out = 1 / (1 + exp(-x)), computed in self's dtype when it is floating and in
// Float otherwise (integer and Bool inputs); out must be floating.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

inline float sigmoid_of(float x) { return 1.0f / (1.0f + expf(-x)); }
inline double sigmoid_of(double x) { return 1.0 / (1.0 + exp(-x)); }

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sigmoid_out)
rt::Error aten_sigmoid_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_sigmoid_out);
  Args a("aten::sigmoid.out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  const char* op = a.op();
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return dispatch<kRealBoolDtypes, kSelected>(op, "self", self->dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    using C = std::conditional_t<std::is_same_v<In, double>, double, float>;
    return dispatch<kFloatDtypes, kSelected>(op, "out", out->dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      const In* x = self->data_as<In>();
      Out* y = out->data_as<Out>();
      for (size_t i = 0; i < self->numel; ++i) y[i] = static_cast<Out>(sigmoid_of(static_cast<C>(x[i])));
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
