// aten::upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size, float[]? scale_factors, *,
//                                  Tensor(a!) out) -> Tensor(a!)
//
// Nearest-neighbour resize of the last two dims of an (N, C, H, W) tensor, as
// ExecuTorch's portable kernel (and PyTorch's "nearest", OpenCV's legacy
// rounding) computes it (sizes and scales: upsample.h); the source of output
// index i is min(floor(i * s), size - 1) with s = float(1 / scale), multiplied
// in float.
#include <math.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"
#include "kernels/upsample.h"

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
  Upsample2d u;
  RT_TRY(plan_upsample_2d(op, *input, output_size, scale_factors, *out, u));
  const int64_t in_h = u.in_h, in_w = u.in_w;
  const int64_t* size = u.size;
  const double* scale = u.scale;
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
