// aten::constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *, Tensor(a!) out) -> Tensor(a!)
//
// pad = [before_last, after_last, before_second_last, ...] (pairs from the
// last dim backwards, at most one pair per dim, all >= 0: ExecuTorch's
// portable kernel takes no negative padding). out has self's dtype and rank;
// the padding is `value`, which must fit the dtype (ExecuTorch's overflow
// check: a float truncates toward zero for integers, a negative integer wraps
// into an unsigned dtype down to -max, NaN and infinities only for floats).
#include <float.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

constexpr uint32_t kPadDtypes = kRealBoolDtypes;

// `s` as T when it fits (c10::overflows), else false.
template <typename T>
bool pad_value(const Scalar& s, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    out = s.is_floating() ? s.d != 0.0 : s.to_int() != 0;
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!s.is_floating()) {
      out = static_cast<T>(s.to_int());
      return true;
    }
    const double v = s.d;
    const bool finite = v == v && v - v == 0.0;
    if (std::is_same_v<T, float> && finite && (v < -FLT_MAX || v > FLT_MAX)) return false;
    out = static_cast<T>(v);
    return true;
  } else {
    using L = std::numeric_limits<T>;
    if (s.is_bool()) {
      out = static_cast<T>(s.b);
      return true;
    }
    if (s.is_floating()) {
      const double v = s.d;
      // [lowest, 2^digits): max + 1 is exact in a double, max itself may not be.
      const double upper = static_cast<double>(uint64_t{1} << (L::digits - 1)) * 2.0;
      if (!(v >= static_cast<double>(L::lowest()) && v < upper)) return false;  // NaN fails too
      out = static_cast<T>(v);
      return true;
    }
    const int64_t v = s.i;
    if constexpr (!L::is_signed) {
      const uint64_t max = static_cast<uint64_t>(L::max());
      if ((v > 0 && static_cast<uint64_t>(v) > max) || (v < 0 && 0u - static_cast<uint64_t>(v) > max)) return false;
      out = static_cast<T>(static_cast<uint64_t>(v));
    } else {
      if (v < static_cast<int64_t>(L::lowest()) || v > static_cast<int64_t>(L::max())) return false;
      out = static_cast<T>(v);
    }
    return true;
  }
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_constant_pad_nd_out)
rt::Error aten_constant_pad_nd_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_constant_pad_nd_out);
  Args a("aten::constant_pad_nd.out", args, nargs);
  rt::Tensor *self, *out;
  rt::ArrayRef<int64_t> pad;
  Scalar value;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "self", self));
  RT_TRY(a.int_list(1, "pad", pad));
  RT_TRY(a.scalar(2, "value", value));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "self", *self, "out", *out));
  const int dim = self->dim;
  RT_CHECK(pad.size % 2 == 0, rt::Error::InvalidArgument, "%s: pad has %u values, not pairs", op,
           static_cast<unsigned>(pad.size));
  RT_CHECK(pad.size / 2 <= static_cast<size_t>(dim), rt::Error::InvalidArgument,
           "%s: pad has %u pairs for %d dims", op, static_cast<unsigned>(pad.size / 2), dim);
  int64_t before[rt::kMaxDims] = {}, after[rt::kMaxDims] = {};
  for (size_t i = 0; i < pad.size; ++i) {
    RT_CHECK(pad[i] >= 0 && pad[i] <= 0x7fffffff, rt::Error::InvalidArgument, "%s: pad[%u] = %lld must be >= 0", op,
             static_cast<unsigned>(i), static_cast<long long>(pad[i]));
    const int d = dim - 1 - static_cast<int>(i / 2);
    (i % 2 == 0 ? before : after)[d] = pad[i];
  }
  int64_t sizes[rt::kMaxDims];
  int32_t expected[rt::kMaxDims];
  for (int d = 0; d < dim; ++d) {
    sizes[d] = self->sizes[d] + before[d] + after[d];
    RT_CHECK(sizes[d] <= 0x7fffffff, rt::Error::InvalidArgument, "%s: the padded dim %d is too large", op, d);
    expected[d] = static_cast<int32_t>(sizes[d]);
  }
  RT_TRY(check_out_shape(op, *out, expected, dim));
  RT_CHECK(!overlaps(*out, *self), rt::Error::InvalidArgument, "%s: out overlaps self", op);
  return dispatch<kPadDtypes, kSelected>(op, "self", self->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T fill;
    RT_CHECK(pad_value<T>(value, fill), rt::Error::InvalidArgument, "%s: value does not fit dtype %s", op,
             rt::scalar_type_name(self->dtype));
    T* y = out->data_as<T>();
    for (size_t i = 0; i < out->numel; ++i) y[i] = fill;
    if (self->numel == 0) return rt::Error::Ok;
    // Each row of self (its last dim) goes to its place in out.
    size_t out_strides[rt::kMaxDims];
    contiguous_strides(out->sizes, dim, out_strides);
    size_t offset = 0;
    for (int d = 0; d < dim; ++d) offset += static_cast<size_t>(before[d]) * out_strides[d];
    if (dim == 0) {
      copy_bytes(y, self->data, sizeof(T));
      return rt::Error::Ok;
    }
    StridedLoop<2> rows{};
    rows.dim = dim - 1;
    size_t in_stride = static_cast<size_t>(self->sizes[dim - 1]);
    for (int d = dim - 2; d >= 0; --d) {
      rows.sizes[d] = static_cast<size_t>(self->sizes[d]);
      rows.strides[0][d] = out_strides[d];
      rows.strides[1][d] = in_stride;
      in_stride *= rows.sizes[d];
    }
    const size_t row_bytes = static_cast<size_t>(self->sizes[dim - 1]) * sizeof(T);
    const uint8_t* x = static_cast<const uint8_t*>(self->data);
    rows.run([&](const size_t* off, size_t n, const size_t* step) {
      for (size_t i = 0; i < n; ++i) {
        copy_bytes(y + offset + off[0] + i * step[0], x + (off[1] + i * step[1]) * sizeof(T), row_bytes);
      }
    });
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
