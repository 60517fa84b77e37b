// aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)
//
// Inputs must match out in every dim but `dim`, whose sizes add up. As in
// PyTorch, a 1-d empty tensor (shape [0]) is skipped whatever the other
// shapes. All tensors must share out's dtype (ExecuTorch would also convert
// mixed dtypes; export does not emit that for the models here).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_cat_out)
rt::Error aten_cat_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_cat_out);
  Args a("aten::cat.out", args, nargs);
  rt::ArrayRef<rt::Tensor*> tensors;
  int64_t dim;
  rt::Tensor* out;
  RT_TRY(a.count(4));
  RT_TRY(a.tensor_list(0, "tensors", tensors));
  RT_TRY(a.integer(1, "dim", dim));
  RT_TRY(a.tensor(2, "out", out));
  RT_TRY(a.returned(3, out));
  const char* op = a.op();
  RT_TRY(check_selected<kSelected>(op, "out", out->dtype));
  RT_CHECK(tensors.size > 0, rt::Error::InvalidArgument, "%s: no tensors", op);
  RT_CHECK(out->dim > 0, rt::Error::InvalidArgument, "%s: cannot concatenate 0-d tensors", op);
  int d = 0;
  RT_TRY(normalize_dim(op, "dim", dim, out->dim, d));
  auto skipped = [](const rt::Tensor& t) { return t.dim == 1 && t.numel == 0; };
  int64_t total = 0;
  for (size_t k = 0; k < tensors.size; ++k) {
    const rt::Tensor& t = *tensors[k];
    RT_TRY(check_same_dtype(op, "tensors[i]", t, "out", *out));
    RT_CHECK(!overlaps(t, *out), rt::Error::InvalidArgument, "%s: tensors[%u] overlaps out", op,
             static_cast<unsigned>(k));
    if (skipped(t)) continue;
    bool ok = t.dim == out->dim;
    for (int i = 0; ok && i < t.dim; ++i) ok = i == d || t.sizes[i] == out->sizes[i];
    RT_CHECK(ok, rt::Error::ShapeMismatch, "%s: tensors[%u] %s does not fit out %s along dim %d", op,
             static_cast<unsigned>(k), ShapeStr(t).c_str(), ShapeStr(*out).c_str(), d);
    total += t.sizes[d];
  }
  RT_CHECK(total == out->sizes[d], rt::Error::ShapeMismatch, "%s: inputs add up to %d along dim %d, out %s", op,
           static_cast<int>(total), d, ShapeStr(*out).c_str());
  const DimSplit s = split_at(*out, d);
  const size_t esize = rt::element_size(out->dtype);
  uint8_t* dst = static_cast<uint8_t*>(out->data);
  for (size_t o = 0; o < s.outer; ++o) {
    for (size_t k = 0; k < tensors.size; ++k) {
      const rt::Tensor& t = *tensors[k];
      if (skipped(t)) continue;
      const size_t chunk = static_cast<size_t>(t.sizes[d]) * s.inner * esize;
      copy_bytes(dst, static_cast<const uint8_t*>(t.data) + o * chunk, chunk);
      dst += chunk;
    }
  }
  return rt::Error::Ok;
}
#endif

}  // namespace kernels
