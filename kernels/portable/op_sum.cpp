// aten::sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
//                       Tensor(a!) out) -> Tensor(a!)
//
// Accumulates in out's dtype (an int8 sum into Long wraps only in Long),
// first element first (see reduce.h); an empty reduction gives 0. A Half or
// BFloat16 out accumulates in float and rounds once (ExecuTorch's ACC type).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_sum_IntList_out)
rt::Error aten_sum_IntList_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_sum_IntList_out);
  Args a("aten::sum.IntList_out", args, nargs);
  rt::Tensor *self, *out;
  Optional<rt::ArrayRef<int64_t>> dim;
  bool keepdim;
  Optional<rt::ScalarType> dtype;
  RT_TRY(a.count(6));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_int_list(1, "dim", dim));
  RT_TRY(a.boolean(2, "keepdim", keepdim));
  RT_TRY(a.optional_dtype(3, "dtype", dtype));
  RT_TRY(a.tensor(4, "out", out));
  RT_TRY(a.returned(5, out));
  const char* op = a.op();
  RT_CHECK(!dtype.present || dtype.value == out->dtype, rt::Error::DtypeMismatch, "%s: out dtype %s != dtype %s",
           op, rt::scalar_type_name(out->dtype), rt::scalar_type_name(dtype.value));
  Reduction r;
  RT_TRY(make_reduction(op, *self, dim, keepdim, *out, r));
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self->dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    return dispatch<kRealHBBF16Dtypes, kSelected>(op, "out", out->dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      using Acc = arith_t<Out>;
      const In* x = self->data_as<In>();
      Out* y = out->data_as<Out>();
      r.for_each_output([&](size_t o, size_t base) {
        if (r.count == 0) {
          y[o] = Out(0);
          return;
        }
        bool first = true;
        Acc acc = Acc(0);
        r.walk(base, [&](size_t i) {
          const Acc v = convert<Acc>(x[i]);
          acc = first ? v : Arith<Acc>::add(acc, v);
          first = false;
        });
        y[o] = convert<Out>(acc);
      });
      return rt::Error::Ok;
    });
  });
}
#endif

}  // namespace kernels
