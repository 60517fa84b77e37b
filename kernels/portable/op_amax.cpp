// aten::amax.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// aten::amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
//
// The largest (smallest) element reduced into each output; dim = [] reduces everything. A NaN
// wins (NaN propagates); out has self's dtype; a reduction over no elements is refused (there
// is no identity), as ExecuTorch refuses it.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

namespace kernels {
namespace {

template <uint32_t kSelected, bool kMax>
rt::Error extreme(const char* name, rt::Value* const* args, size_t nargs) {
  Args a(name, args, nargs);
  rt::Tensor *self, *out;
  Optional<rt::ArrayRef<int64_t>> dims;
  bool keepdim;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_int_list(1, "dim", dims));
  RT_TRY(a.boolean(2, "keepdim", keepdim));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  Reduction r;
  RT_TRY(make_reduction(op, *self, dims, keepdim, *out, r));
  RT_CHECK(r.count > 0 || out->numel == 0, rt::Error::InvalidArgument,
           "%s: a reduction over no elements has no %s", op, kMax ? "maximum" : "minimum");
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = arith_t<T>;  // Half/BFloat16 compare as float
    const T* x = self->data_as<T>();
    T* y = out->data_as<T>();
    r.for_each_output([&](size_t o, size_t base) {
      bool first = true;
      Acc best = Acc(0);
      size_t at = base;
      r.walk(base, [&](size_t i) {
        const Acc v = convert<Acc>(x[i]);
        bool take = first || (kMax ? v > best : v < best);
        if constexpr (is_float_v<Acc>) take = take || (v != v && best == best);  // NaN wins
        if (take) {
          best = v;
          at = i;
        }
        first = false;
      });
      y[o] = x[at];
    });
    return rt::Error::Ok;
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_amax_out)
rt::Error aten_amax_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return extreme<KERNEL_DTYPES(aten_amax_out), true>("aten::amax.out", args, nargs);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_amin_out)
rt::Error aten_amin_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  return extreme<KERNEL_DTYPES(aten_amin_out), false>("aten::amin.out", args, nargs);
}
#endif

}  // namespace kernels
