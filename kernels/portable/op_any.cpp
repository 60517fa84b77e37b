// aten::any.all_out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
// aten::any.out(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)
// aten::any.dims_out(Tensor self, int[]? dim=None, bool keepdim=False, *, Tensor(a!) out)
//
// out = whether any element reduced into it is non-zero (NaN counts, as NaN != 0); an empty
// reduction gives false. out is Bool or Byte (1/0), as ExecuTorch's kernel takes it.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

namespace kernels {
namespace {

template <uint32_t kSelected>
rt::Error any(const char* op, const rt::Tensor& self, const Optional<rt::ArrayRef<int64_t>>& dims,
              bool keepdim, rt::Tensor& out) {
  RT_CHECK(out.dtype == rt::ScalarType::Bool || out.dtype == rt::ScalarType::Byte,
           rt::Error::DtypeMismatch, "%s: out is %s, expected Bool or Byte", op,
           rt::scalar_type_name(out.dtype));
  Reduction r;
  RT_TRY(make_reduction(op, self, dims, keepdim, out, r));
  uint8_t* y = out.data_as<uint8_t>();  // Bool and Byte: one byte, 1 or 0
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "self", self.dtype, [&](auto tag) {
    using In = typename decltype(tag)::type;
    using Acc = arith_t<In>;  // Half/BFloat16 compare as float
    const In* x = self.data_as<In>();
    r.for_each_output([&](size_t o, size_t base) {
      bool found = false;
      r.walk(base, [&](size_t i) { found = found || convert<Acc>(x[i]) != Acc(0); });
      y[o] = found ? 1 : 0;
    });
    return rt::Error::Ok;
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_any_all_out)
rt::Error aten_any_all_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_any_all_out);
  Args a("aten::any.all_out", args, nargs);
  rt::Tensor *self, *out;
  RT_TRY(a.count(3));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.tensor(1, "out", out));
  RT_TRY(a.returned(2, out));
  return any<kSelected>(a.op(), *self, Optional<rt::ArrayRef<int64_t>>{false, {}}, false, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_any_out)
rt::Error aten_any_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_any_out);
  Args a("aten::any.out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim;
  bool keepdim;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.boolean(2, "keepdim", keepdim));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const Optional<rt::ArrayRef<int64_t>> dims = {true, {&dim, 1}};
  return any<kSelected>(a.op(), *self, dims, keepdim, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_any_dims_out)
rt::Error aten_any_dims_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_any_dims_out);
  Args a("aten::any.dims_out", args, nargs);
  rt::Tensor *self, *out;
  Optional<rt::ArrayRef<int64_t>> dims;
  bool keepdim;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_int_list(1, "dim", dims));
  RT_TRY(a.boolean(2, "keepdim", keepdim));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  return any<kSelected>(a.op(), *self, dims, keepdim, *out);
}
#endif

}  // namespace kernels
