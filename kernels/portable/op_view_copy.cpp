// Copies that keep every element in order and only change the shape:
//   aten::view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out)
//   aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out)
//   aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
//   aten::squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out)
//   aten::clone.out(Tensor self, *, MemoryFormat? memory_format=None, Tensor(a!) out)
//   dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//                                       Tensor(a!) out)
// Each computes the shape the operator gives, requires exactly that of out
// (same dtype), and copies the bytes. A view of a planned tensor emits no
// instruction at all in ExecuTorch programs; view_copy.out appears when the
// view's result must live in its own buffer (e.g. a program output).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

template <uint32_t kSelected>
rt::Error copy_as(const char* op, const rt::Tensor& self, const int32_t* sizes, int dim, rt::Tensor& out) {
  RT_TRY(check_selected<kSelected>(op, "self", self.dtype));
  RT_TRY(check_same_dtype(op, "self", self, "out", out));
  RT_TRY(check_out_shape(op, out, sizes, dim));
  RT_CHECK(out.nbytes == self.nbytes, rt::Error::ShapeMismatch, "%s: out %s holds %u bytes, self %s holds %u",
           op, ShapeStr(out).c_str(), static_cast<unsigned>(out.nbytes), ShapeStr(self).c_str(),
           static_cast<unsigned>(self.nbytes));
  copy_bytes(out.data, self.data, self.nbytes);
  return rt::Error::Ok;
}

// Drop the size-1 dims flagged in `drop` (dims of size != 1 stay, as in PyTorch).
template <uint32_t kSelected>
rt::Error squeeze(const char* op, const rt::Tensor& self, const bool* drop, rt::Tensor& out) {
  int32_t sizes[rt::kMaxDims];
  int n = 0;
  for (int d = 0; d < self.dim; ++d) {
    if (!(drop[d] && self.sizes[d] == 1)) sizes[n++] = self.sizes[d];
  }
  return copy_as<kSelected>(op, self, sizes, n, out);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_view_copy_out)
rt::Error aten_view_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_view_copy_out);
  Args a("aten::view_copy.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> size;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "size", size));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  RT_CHECK(size.size <= static_cast<size_t>(rt::kMaxDims), rt::Error::NotSupported, "%s: %u dims (max %d)", a.op(),
           static_cast<unsigned>(size.size), rt::kMaxDims);
  // One entry may be -1: whatever makes the element counts match.
  int32_t sizes[rt::kMaxDims];
  int infer = -1;
  uint64_t known = 1;
  for (size_t i = 0; i < size.size; ++i) {
    if (size[i] == -1) {
      RT_CHECK(infer < 0, rt::Error::InvalidArgument, "%s: more than one -1 in size", a.op());
      infer = static_cast<int>(i);
      sizes[i] = 0;
      continue;
    }
    RT_CHECK(size[i] >= 0 && size[i] <= 0x7fffffff, rt::Error::InvalidArgument, "%s: size[%u] = %d", a.op(),
             static_cast<unsigned>(i), static_cast<int>(size[i]));
    sizes[i] = static_cast<int32_t>(size[i]);
    known *= static_cast<uint64_t>(size[i]);
    RT_CHECK(known <= 0xffffffffu, rt::Error::ShapeMismatch, "%s: size has too many elements", a.op());
  }
  if (infer >= 0) {
    RT_CHECK(known != 0 && self->numel % known == 0, rt::Error::ShapeMismatch,
             "%s: cannot view %s with a -1 in size", a.op(), ShapeStr(*self).c_str());
    sizes[infer] = static_cast<int32_t>(self->numel / known);
  } else {
    RT_CHECK(known == self->numel, rt::Error::ShapeMismatch, "%s: size has %u elements, self %s has %u", a.op(),
             static_cast<unsigned>(known), ShapeStr(*self).c_str(), static_cast<unsigned>(self->numel));
  }
  return copy_as<kSelected>(a.op(), *self, sizes, static_cast<int>(size.size), *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_unsqueeze_copy_out)
rt::Error aten_unsqueeze_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_unsqueeze_copy_out);
  Args a("aten::unsqueeze_copy.out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  RT_CHECK(self->dim < rt::kMaxDims, rt::Error::NotSupported, "%s: result would exceed %d dims", a.op(),
           rt::kMaxDims);
  int d = 0;
  RT_TRY(normalize_dim(a.op(), "dim", dim, self->dim + 1, d));
  int32_t sizes[rt::kMaxDims];
  for (int i = 0, j = 0; i <= self->dim; ++i) sizes[i] = i == d ? 1 : self->sizes[j++];
  return copy_as<kSelected>(a.op(), *self, sizes, self->dim + 1, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_squeeze_copy_dims_out)
rt::Error aten_squeeze_copy_dims_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_squeeze_copy_dims_out);
  Args a("aten::squeeze_copy.dims_out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> dims;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "dim", dims));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  bool drop[rt::kMaxDims] = {};
  for (size_t i = 0; i < dims.size; ++i) {
    int d = 0;
    RT_TRY(normalize_dim(a.op(), "dim[i]", dims[i], self->dim, d, true));
    if (self->dim > 0) {
      RT_CHECK(!drop[d], rt::Error::InvalidArgument, "%s: dim %d repeats", a.op(), d);
      drop[d] = true;
    }
  }
  return squeeze<kSelected>(a.op(), *self, drop, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_squeeze_copy_dim_out)
rt::Error aten_squeeze_copy_dim_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_squeeze_copy_dim_out);
  Args a("aten::squeeze_copy.dim_out", args, nargs);
  rt::Tensor *self, *out;
  int64_t dim;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  bool drop[rt::kMaxDims] = {};
  int d = 0;
  RT_TRY(normalize_dim(a.op(), "dim", dim, self->dim, d, true));
  if (self->dim > 0) drop[d] = true;
  return squeeze<kSelected>(a.op(), *self, drop, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_clone_out)
rt::Error aten_clone_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_clone_out);
  Args a("aten::clone.out", args, nargs);
  rt::Tensor *self, *out;
  Optional<int64_t> memory_format;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.optional_integer(1, "memory_format", memory_format));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  // c10::MemoryFormat: 0 = Contiguous, 1 = Preserve (of a contiguous tensor).
  RT_CHECK(!memory_format.present || memory_format.value == 0 || memory_format.value == 1, rt::Error::NotSupported,
           "%s: memory_format %d is not supported", a.op(), static_cast<int>(memory_format.value));
  return copy_as<kSelected>(a.op(), *self, self->sizes, self->dim, *out);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_dim_order_ops__clone_dim_order_out)
rt::Error dim_order_ops__clone_dim_order_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(dim_order_ops__clone_dim_order_out);
  Args a("dim_order_ops::_clone_dim_order.out", args, nargs);
  rt::Tensor *self, *out;
  bool non_blocking;
  Optional<rt::ArrayRef<int64_t>> dim_order;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.boolean(1, "non_blocking", non_blocking));
  RT_TRY(a.optional_int_list(2, "dim_order", dim_order));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  RT_TRY(check_contiguous_dim_order(a.op(), dim_order.present ? &dim_order.value : nullptr, self->dim));
  (void)non_blocking;  // copies are synchronous here
  return copy_as<kSelected>(a.op(), *self, self->sizes, self->dim, *out);
}
#endif

}  // namespace kernels
