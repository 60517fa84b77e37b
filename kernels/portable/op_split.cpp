// aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, Tensor(a!)[] out) -> ()
// aten::split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, Tensor(a!)[] out) -> ()
//
// Each output gets its slice of `dim`: for every index of the dims before
// `dim`, one contiguous run of split_size * (product of the dims after) elements.
// Sizes may be 0 (empty outputs). The schema returns nothing, yet ExecuTorch's
// emitter passes the out list twice (nargs 5); a call without it (4) is taken too.
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

// Checks every output against self and `sizes` (a size per output, or
// `uniform` chunks with a short last one when sizes is null), then copies.
template <uint32_t kSelected>
rt::Error split_copy(const char* op, const rt::Tensor& self, int64_t dim, rt::ArrayRef<rt::Tensor*> outs,
                     const int64_t* sizes, int64_t uniform) {
  RT_TRY(check_selected<kSelected>(op, "self", self.dtype));
  RT_CHECK(self.dim > 0, rt::Error::InvalidArgument, "%s: self must have at least one dim", op);
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, self.dim, d));
  const DimSplit s = split_at(self, d);
  const size_t esize = rt::element_size(self.dtype);
  int64_t start = 0;
  for (size_t k = 0; k < outs.size; ++k) {
    const int64_t remaining = static_cast<int64_t>(s.size) - start;
    const int64_t len = sizes != nullptr ? sizes[k] : (uniform < remaining ? uniform : remaining);
    RT_CHECK(len >= 0 && len <= remaining, rt::Error::InvalidArgument,
             "%s: split %u of size %d does not fit dim %d of size %u", op, static_cast<unsigned>(k),
             static_cast<int>(len), d, static_cast<unsigned>(s.size));
    const rt::Tensor& out = *outs[k];
    RT_TRY(check_same_dtype(op, "self", self, "out", out));
    int32_t expected[rt::kMaxDims];
    for (int i = 0; i < self.dim; ++i) expected[i] = self.sizes[i];
    expected[d] = static_cast<int32_t>(len);
    RT_TRY(check_out_shape(op, out, expected, self.dim));
    RT_CHECK(!overlaps(out, self), rt::Error::InvalidArgument, "%s: out[%u] overlaps self", op,
             static_cast<unsigned>(k));
    start += len;
  }
  RT_CHECK(start == static_cast<int64_t>(s.size), rt::Error::InvalidArgument,
           "%s: split sizes add up to %d, dim %d has size %u", op, static_cast<int>(start), d,
           static_cast<unsigned>(s.size));
  // All checked: now copy.
  const uint8_t* src = static_cast<const uint8_t*>(self.data);
  const size_t row = s.size * s.inner * esize;  // bytes of one outer index in self
  size_t offset = 0;                            // bytes into a row where this output starts
  for (size_t k = 0; k < outs.size; ++k) {
    const size_t chunk = static_cast<size_t>(outs[k]->sizes[d]) * s.inner * esize;
    uint8_t* dst = static_cast<uint8_t*>(outs[k]->data);
    for (size_t o = 0; o < s.outer; ++o) copy_bytes(dst + o * chunk, src + o * row + offset, chunk);
    offset += chunk;
  }
  return rt::Error::Ok;
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_split_with_sizes_copy_out)
rt::Error aten_split_with_sizes_copy_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_split_with_sizes_copy_out);
  Args a("aten::split_with_sizes_copy.out", args, nargs);
  rt::Tensor* self;
  rt::ArrayRef<int64_t> split_sizes;
  int64_t dim;
  rt::ArrayRef<rt::Tensor*> out;
  RT_TRY(a.count_either(4, 5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "split_sizes", split_sizes));
  RT_TRY(a.integer(2, "dim", dim));
  RT_TRY(a.tensor_list(3, "out", out));
  RT_TRY(a.optional_returned_list(4, out));
  RT_CHECK(split_sizes.size == out.size, rt::Error::InvalidArgument, "%s: %u split sizes for %u outputs", a.op(),
           static_cast<unsigned>(split_sizes.size), static_cast<unsigned>(out.size));
  return split_copy<kSelected>(a.op(), *self, dim, out, split_sizes.data, 0);
}
#endif

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_split_copy_Tensor_out)
rt::Error aten_split_copy_Tensor_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_split_copy_Tensor_out);
  Args a("aten::split_copy.Tensor_out", args, nargs);
  rt::Tensor* self;
  int64_t split_size, dim;
  rt::ArrayRef<rt::Tensor*> out;
  RT_TRY(a.count_either(4, 5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.integer(1, "split_size", split_size));
  RT_TRY(a.integer(2, "dim", dim));
  RT_TRY(a.tensor_list(3, "out", out));
  RT_TRY(a.optional_returned_list(4, out));
  RT_CHECK(self->dim > 0, rt::Error::InvalidArgument, "%s: self must have at least one dim", a.op());
  int d = 0;
  RT_TRY(normalize_dim(a.op(), "dim", dim, self->dim, d));
  const int64_t size = self->sizes[d];
  RT_CHECK(split_size > 0 || (split_size == 0 && size == 0), rt::Error::InvalidArgument,
           "%s: split_size %d must be positive", a.op(), static_cast<int>(split_size));
  const int64_t chunks = size == 0 ? 1 : (size + split_size - 1) / split_size;
  RT_CHECK(static_cast<int64_t>(out.size) == chunks, rt::Error::InvalidArgument,
           "%s: %u outputs, splitting size %d by %d gives %d", a.op(), static_cast<unsigned>(out.size),
           static_cast<int>(size), static_cast<int>(split_size), static_cast<int>(chunks));
  return split_copy<kSelected>(a.op(), *self, dim, out, nullptr, split_size);
}
#endif

}  // namespace kernels
