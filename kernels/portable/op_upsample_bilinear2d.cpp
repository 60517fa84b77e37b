// aten::upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size, bool align_corners,
//                                   float[]? scale_factors, *, Tensor(a!) out) -> Tensor(a!)
//
// Bilinear resize of the last two dims of an (N, C, H, W) tensor, as ExecuTorch's portable
// kernel (PyTorch's "bilinear") computes it (sizes and scales: upsample.h). Per output index i
// of a dim: ratio = (in - 1) / (out - 1) with align_corners (0 for one output), else
// 1 / scale, as a float; source = ratio * i (align_corners) or max(ratio * (i + 0.5) - 0.5, 0),
// in float; i0 = min(floor(source), in - 1), i1 = i0 + 1 unless i0 is the last; the weight of
// i1 is clamp(source - i0, 0, 1). An unchanged size copies. The value is
// (x00 * w0 + x01 * w1) * h0 + (x10 * w0 + x11 * w1) * h1 in C++'s types (float weights:
// float for integer and float data, double for Double), converted to the element type.
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/args.h"
#include "kernels/dtype.h"
#include "kernels/shape.h"
#include "kernels/upsample.h"

namespace kernels {
namespace {

struct Taps {
  int64_t i0;
  int64_t i1;
  float w0;  // weight of i0
  float w1;  // weight of i1
};

Taps taps(float ratio, int64_t out_index, int64_t in_size, int64_t out_size, bool align_corners) {
  if (out_size == in_size) return {out_index, out_index, 1.0f, 0.0f};
  float source = 0.0f;
  if (align_corners) {
    source = ratio * static_cast<float>(out_index);
  } else {
    source = ratio * (static_cast<float>(out_index) + 0.5f) - 0.5f;
    if (source < 0.0f) source = 0.0f;
  }
  Taps t;
  const int64_t fl = static_cast<int64_t>(floorf(source));
  t.i0 = fl < in_size - 1 ? fl : in_size - 1;
  float w1 = source - static_cast<float>(t.i0);
  w1 = w1 < 0.0f ? 0.0f : (w1 > 1.0f ? 1.0f : w1);
  t.i1 = t.i0 + (t.i0 < in_size - 1 ? 1 : 0);
  t.w1 = w1;
  t.w0 = 1.0f - w1;
  return t;
}

float ratio_of(int64_t in_size, int64_t out_size, bool align_corners, double scale) {
  if (align_corners) {
    return out_size > 1 ? static_cast<float>(static_cast<double>(in_size - 1) / static_cast<double>(out_size - 1))
                        : 0.0f;
  }
  return static_cast<float>(1.0 / scale);
}

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_upsample_bilinear2d_vec_out)
rt::Error aten_upsample_bilinear2d_vec_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_upsample_bilinear2d_vec_out);
  Args a("aten::upsample_bilinear2d.vec_out", args, nargs);
  rt::Tensor *input, *out;
  Optional<rt::ArrayRef<int64_t>> output_size;
  Optional<rt::ArrayRef<double>> scale_factors;
  bool align_corners;
  RT_TRY(a.count(6));
  RT_TRY(a.tensor(0, "input", input));
  RT_TRY(a.optional_int_list(1, "output_size", output_size));
  RT_TRY(a.boolean(2, "align_corners", align_corners));
  RT_TRY(a.optional_double_list(3, "scale_factors", scale_factors));
  RT_TRY(a.tensor(4, "out", out));
  RT_TRY(a.returned(5, out));
  const char* op = a.op();
  Upsample2d u;
  RT_TRY(plan_upsample_2d(op, *input, output_size, scale_factors, *out, u));
  const float rh = ratio_of(u.in_h, u.size[0], align_corners, u.scale[0]);
  const float rw = ratio_of(u.in_w, u.size[1], align_corners, u.scale[1]);
  const size_t planes = static_cast<size_t>(input->sizes[0]) * static_cast<size_t>(input->sizes[1]);
  return dispatch<kRealDtypes, kSelected>(op, "input", input->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using V = std::conditional_t<std::is_same_v<T, double>, double, float>;  // T * float
    const T* x = input->data_as<T>();
    T* y = out->data_as<T>();
    for (size_t c = 0; c < planes; ++c, x += u.in_h * u.in_w) {
      for (int64_t oy = 0; oy < u.size[0]; ++oy) {
        const Taps h = taps(rh, oy, u.in_h, u.size[0], align_corners);
        const T* top = x + h.i0 * u.in_w;
        const T* bottom = x + h.i1 * u.in_w;
        for (int64_t ox = 0; ox < u.size[1]; ++ox) {
          const Taps w = taps(rw, ox, u.in_w, u.size[1], align_corners);
          const V t = static_cast<V>(top[w.i0]) * w.w0 + static_cast<V>(top[w.i1]) * w.w1;
          const V b = static_cast<V>(bottom[w.i0]) * w.w0 + static_cast<V>(bottom[w.i1]) * w.w1;
          *y++ = static_cast<T>(t * h.w0 + b * h.w1);
        }
      }
    }
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
