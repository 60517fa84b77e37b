// aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *,
//                                  Tensor(a!) out) -> Tensor(a!)
//
// Nearest-neighbour resize of the last two dims of an (N, C, H, W) tensor, as
// ExecuTorch's portable kernel (and PyTorch's "nearest", OpenCV's legacy
// rounding) computes it: exactly one of output_size and scale_factors (two
// positive values each); with scale factors the output is
// trunc(size * scale), and the source of output index i is
// min(floor(i * s), size - 1) with s = float(1 / scale) (scale = out / in for
// an output_size), multiplied in float.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"

namespace kernels {
namespace {

constexpr uint32_t kUpsampleDtypes = kRealDtypes;

inline int64_t source_index(float scale, int64_t i, int64_t size) {
  const int64_t s = static_cast<int64_t>(floorf(static_cast<float>(i) * scale));
  return s < size - 1 ? s : size - 1;
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_upsample_nearest2d_vec_out)
rt::Error aten_upsample_nearest2d_vec_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_upsample_nearest2d_vec_out);
  Args a("aten::upsample_nearest2d.vec_out", args, nargs);
  rt::Tensor *input, *out;
  Optional<rt::ArrayRef<int64_t>> output_size;
  Optional<rt::ArrayRef<double>> scale_factors;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "input", input));
  RT_TRY(a.optional_int_list(1, "output_size", output_size));
  RT_TRY(a.optional_double_list(2, "scale_factors", scale_factors));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_TRY(check_same_dtype(op, "input", *input, "out", *out));
  RT_CHECK(input->dim == 4, rt::Error::ShapeMismatch, "%s: input %s must be 4-d (N, C, H, W)", op,
           ShapeStr(*input).c_str());
  RT_CHECK(output_size.present != scale_factors.present, rt::Error::InvalidArgument,
           "%s: expected exactly one of output_size and scale_factors", op);
  const int64_t in_h = input->sizes[2], in_w = input->sizes[3];
  RT_CHECK(in_h > 0 && in_w > 0, rt::Error::ShapeMismatch, "%s: input %s has no rows or columns to sample", op,
           ShapeStr(*input).c_str());
  double scale[2];
  int64_t size[2];
  if (scale_factors.present) {
    const rt::ArrayRef<double>& f = scale_factors.value;
    RT_CHECK(f.size == 2 && f[0] > 0.0 && f[1] > 0.0, rt::Error::InvalidArgument,
             "%s: scale_factors must be two positive values", op);
    for (int i = 0; i < 2; ++i) {
      scale[i] = f[static_cast<size_t>(i)];
      const double s = static_cast<double>(input->sizes[2 + i]) * scale[i];
      RT_CHECK(s < 2147483648.0, rt::Error::InvalidArgument, "%s: scale_factors[%d] gives too large an output", op,
               i);
      size[i] = static_cast<int64_t>(s);
    }
  } else {
    const rt::ArrayRef<int64_t>& o = output_size.value;
    RT_CHECK(o.size == 2 && o[0] > 0 && o[1] > 0 && o[0] <= 0x7fffffff && o[1] <= 0x7fffffff,
             rt::Error::InvalidArgument, "%s: output_size must be two positive sizes", op);
    for (int i = 0; i < 2; ++i) {
      size[i] = o[static_cast<size_t>(i)];
      scale[i] = static_cast<double>(size[i]) / static_cast<double>(input->sizes[2 + i]);
    }
  }
  RT_CHECK(size[0] > 0 && size[1] > 0, rt::Error::InvalidArgument, "%s: the output would be empty (%lld x %lld)", op,
           static_cast<long long>(size[0]), static_cast<long long>(size[1]));
  const int32_t expected[4] = {input->sizes[0], input->sizes[1], static_cast<int32_t>(size[0]),
                               static_cast<int32_t>(size[1])};
  RT_TRY(check_out_shape(op, *out, expected, 4));
  RT_CHECK(!overlaps(*out, *input), rt::Error::InvalidArgument, "%s: out overlaps input", op);
  const float sh = static_cast<float>(1.0 / scale[0]), sw = static_cast<float>(1.0 / scale[1]);
  const size_t planes = static_cast<size_t>(input->sizes[0]) * static_cast<size_t>(input->sizes[1]);
  return dispatch<kUpsampleDtypes, kSelected>(op, "input", input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = input->data_as<T>();
    T* y = out->data_as<T>();
    for (size_t c = 0; c < planes; ++c, x += in_h * in_w) {
      for (int64_t oy = 0; oy < size[0]; ++oy) {
        const T* row = x + source_index(sh, oy, in_h) * in_w;
        for (int64_t ox = 0; ox < size[1]; ++ox) *y++ = row[source_index(sw, ox, in_w)];
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
