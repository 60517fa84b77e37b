// aten::mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out)
// aten::mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)   (all dims)
//
// The sum as sum.IntList_out computes it, in out's (floating) dtype, then one
// division by the element count. out (and dtype, when given) must be floating;
// an integer or Bool self needs the dtype argument, as in ExecuTorch. What a
// CPU-forced mean.dim (or AdaptiveAvgPool2d(1)) lowers to is mean.out over
// dims [-1, -2] with keepdim.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/reduce.h"

namespace kernels {
namespace {

template <uint32_t kSelected>
rt::Error mean(const char* op, const rt::Tensor& self, const Optional<rt::ArrayRef<int64_t>>& dim, bool keepdim,
               const Optional<rt::ScalarType>& dtype, rt::Tensor& out) {
  RT_CHECK(!dtype.present || dtype.value == out.dtype, rt::Error::DtypeMismatch, "%s: out dtype %s != dtype %s", op,
           rt::scalar_type_name(out.dtype), rt::scalar_type_name(dtype.value));
  // ExecuTorch's check_mean_dim_args: without a dtype, self must already be floating.
  RT_CHECK(dtype.present || is_floating(self.dtype), rt::Error::DtypeMismatch,
           "%s: self has dtype %s; an integer mean needs a floating dtype argument", op,
           rt::scalar_type_name(self.dtype));
  Reduction r;
  RT_TRY(make_reduction(op, self, dim, keepdim, out, r));
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self.dtype, [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    return dispatch<kFloatHBF16Dtypes, kSelected>(op, "out", out.dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      using Acc = arith_t<Out>;  // Half and BFloat16: float, rounded once (ExecuTorch's ACC)
      const In* x = self.data_as<In>();
      Out* y = out.data_as<Out>();
      const Acc count = static_cast<Acc>(r.count);
      r.for_each_output([&](size_t o, size_t base) {
        bool first = true;
        Acc acc = Acc(0);
        r.walk(base, [&](size_t i) {
          const Acc v = convert<Acc>(x[i]);
          acc = first ? v : acc + v;
          first = false;
        });
        y[o] = convert<Out>(acc / count);  // 0/0 = NaN for an empty reduction, as in PyTorch
      });
      return rt::Error::Ok;
    });
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_mean_out)
rt::Error aten_mean_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::mean.out", args, nargs);
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
  return mean<KERNEL_DTYPES(aten_mean_out)>(a.op(), *self, dim, keepdim, dtype, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_mean_dtype_out)
rt::Error aten_mean_dtype_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::mean.dtype_out", args, nargs);
  rt::Tensor *self, *out;
  Optional<rt::ScalarType> dtype;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_dtype(1, "dtype", dtype));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const Optional<rt::ArrayRef<int64_t>> all{false, {nullptr, 0}};
  return mean<KERNEL_DTYPES(aten_mean_dtype_out)>(a.op(), *self, all, false, dtype, *out);
}
#endif

}  // namespace kernels
