// aten::full.out(SymInt[] size, Scalar fill_value, *, Tensor(a!) out)
// aten::full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat? memory_format=None, Tensor(a!) out)
//
// out (of shape `size`, or self's) filled with fill_value in out's dtype (any real, Bool,
// Half or BFloat16): what export makes of torch.full / zeros / ones and their _like forms.
// As in ExecuTorch, fill_value must not overflow out's dtype (check_overflow_scalar_cast,
// see convert.h); self's data is not read.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/convert.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

template <uint32_t kSelected>
rt::Error fill(const char* op, const Scalar& value, rt::Tensor& out) {
  return dispatch<kRealHBBF16Dtypes, kSelected>(op, "out", out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    RT_CHECK(scalar_cast_checked<T>(value, v), rt::Error::InvalidArgument, "%s: fill_value overflows dtype %s", op,
             rt::scalar_type_name(out.dtype));
    T* o = out.data_as<T>();
    for (size_t i = 0; i < out.numel; ++i) o[i] = v;
    return rt::Error::Ok;
  });
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_full_out)
rt::Error aten_full_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::full.out", args, nargs);
  rt::ArrayRef<int64_t> size;
  Scalar value;
  rt::Tensor* out;
  RT_TRY(a.count(4));
  RT_TRY(a.int_list(0, "size", size));
  RT_TRY(a.scalar(1, "fill_value", value));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_CHECK(size.size <= static_cast<size_t>(rt::kMaxDims), rt::Error::NotSupported, "%s: %u dims (max %d)", op,
           static_cast<unsigned>(size.size), rt::kMaxDims);
  int32_t sizes[rt::kMaxDims];
  for (size_t i = 0; i < size.size; ++i) {
    RT_CHECK(size[i] >= 0 && size[i] <= 0x7fffffff, rt::Error::InvalidArgument, "%s: size[%u] = %d", op,
             static_cast<unsigned>(i), static_cast<int>(size[i]));
    sizes[i] = static_cast<int32_t>(size[i]);
  }
  RT_TRY(check_out_shape(op, *out, sizes, static_cast<int>(size.size)));
  return fill<KERNEL_DTYPES(aten_full_out)>(op, value, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_full_like_out)
rt::Error aten_full_like_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  Args a("aten::full_like.out", args, nargs);
  rt::Tensor *self, *out;
  Scalar value;
  Optional<int64_t> memory_format;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.scalar(1, "fill_value", value));
  RT_TRY(a.optional_integer(2, "memory_format", memory_format));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  // c10::MemoryFormat: 0 = Contiguous, 1 = Preserve (of a contiguous tensor).
  RT_CHECK(!memory_format.present || memory_format.value == 0 || memory_format.value == 1, rt::Error::NotSupported,
           "%s: memory_format %d is not supported", op, static_cast<int>(memory_format.value));
  RT_TRY(check_same_shape(op, "self", *self, "out", *out));
  return fill<KERNEL_DTYPES(aten_full_like_out)>(op, value, *out);
}
#endif

}  // namespace kernels
