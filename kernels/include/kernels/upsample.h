// What the 2-d resizes (upsample_nearest2d, upsample_bilinear2d) share: the checks of their
// arguments and the output size and scale per spatial dim, as ExecuTorch's portable kernels
// compute them. Exactly one of output_size and scale_factors (two positive values each); with
// scale factors the output is trunc(size * scale); with an output size, scale = out / in.
#pragma once

#include <stdint.h>

#include "kernels/args.h"
#include "kernels/shape.h"

namespace kernels {

struct Upsample2d {
  int64_t in_h;
  int64_t in_w;
  int64_t size[2];   // output rows, columns
  double scale[2];   // output / input, per dim
};

inline rt::Error plan_upsample_2d(const char* op, const rt::Tensor& input,
                                  const Optional<rt::ArrayRef<int64_t>>& output_size,
                                  const Optional<rt::ArrayRef<double>>& scale_factors, const rt::Tensor& out,
                                  Upsample2d& u) {
  RT_TRY(check_same_dtype(op, "input", input, "out", out));
  RT_CHECK(input.dim == 4, rt::Error::ShapeMismatch, "%s: input %s must be 4-d (N, C, H, W)", op,
           ShapeStr(input).c_str());
  RT_CHECK(output_size.present != scale_factors.present, rt::Error::InvalidArgument,
           "%s: expected exactly one of output_size and scale_factors", op);
  u.in_h = input.sizes[2];
  u.in_w = input.sizes[3];
  RT_CHECK(u.in_h > 0 && u.in_w > 0, rt::Error::ShapeMismatch, "%s: input %s has no rows or columns to sample", op,
           ShapeStr(input).c_str());
  if (scale_factors.present) {
    const rt::ArrayRef<double>& f = scale_factors.value;
    RT_CHECK(f.size == 2 && f[0] > 0.0 && f[1] > 0.0, rt::Error::InvalidArgument,
             "%s: scale_factors must be two positive values", op);
    for (int i = 0; i < 2; ++i) {
      u.scale[i] = f[static_cast<size_t>(i)];
      const double s = static_cast<double>(input.sizes[2 + i]) * u.scale[i];
      RT_CHECK(s < 2147483648.0, rt::Error::InvalidArgument, "%s: scale_factors[%d] gives too large an output", op,
               i);
      u.size[i] = static_cast<int64_t>(s);
    }
  } else {
    const rt::ArrayRef<int64_t>& o = output_size.value;
    RT_CHECK(o.size == 2 && o[0] > 0 && o[1] > 0 && o[0] <= 0x7fffffff && o[1] <= 0x7fffffff,
             rt::Error::InvalidArgument, "%s: output_size must be two positive sizes", op);
    for (int i = 0; i < 2; ++i) {
      u.size[i] = o[static_cast<size_t>(i)];
      u.scale[i] = static_cast<double>(u.size[i]) / static_cast<double>(input.sizes[2 + i]);
    }
  }
  RT_CHECK(u.size[0] > 0 && u.size[1] > 0, rt::Error::InvalidArgument, "%s: the output would be empty (%lld x %lld)",
           op, static_cast<long long>(u.size[0]), static_cast<long long>(u.size[1]));
  const int32_t expected[4] = {input.sizes[0], input.sizes[1], static_cast<int32_t>(u.size[0]),
                               static_cast<int32_t>(u.size[1])};
  RT_TRY(check_out_shape(op, out, expected, 4));
  RT_CHECK(!overlaps(out, input), rt::Error::InvalidArgument, "%s: out overlaps input", op);
  return rt::Error::Ok;
}

}  // namespace kernels
