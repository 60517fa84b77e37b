// Sliding-window geometry shared by pooling and convolution: the per-dim
// parameter lists (kernel_size, stride, padding, dilation, output_padding)
// and ExecuTorch's output-size formula.
//
// A parameter list holds one value for every spatial dim or a single value
// for all of them; pooling's stride may also be empty (= kernel_size).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/shape.h"
#include "rt/error.h"
#include "rt/value.h"

namespace kernels {

// For the functions that read a call's window parameters: they gain nothing from
// vectorization, and the Helium code GCC 12 makes for their small int64 arrays gave wrong values
// under QEMU 7.2 in the every-kernel firmware (a 1-d convolution computed with its H parameters;
// not root-caused: compiler or emulator), so they stay scalar.
#if defined(__GNUC__) && !defined(__clang__)
#define KERNELS_SCALAR_SETUP __attribute__((optimize("no-tree-vectorize")))
#else
#define KERNELS_SCALAR_SETUP
#endif

// Up to two spatial dims (H, W): 2-d pooling and 1-d/2-d convolution.
constexpr int kMaxWindowDims = 2;

// `list` expanded to `ndim` values (all >= min_value) into `out`; an empty
// list gives `fallback` when `allow_empty`.
inline rt::Error window_param(const char* op, const char* name, const rt::ArrayRef<int64_t>& list, int ndim,
                              int64_t min_value, bool allow_empty, const int64_t* fallback, int64_t* out) {
  const size_t n = list.size;
  RT_CHECK(n == 1 || n == static_cast<size_t>(ndim) || (allow_empty && n == 0), rt::Error::InvalidArgument,
           "%s: %s has %u values, expected %s%d", op, name, static_cast<unsigned>(n),
           allow_empty ? "0, 1 or " : "1 or ", ndim);
  for (int d = 0; d < ndim; ++d) {
    out[d] = n == 0 ? fallback[d] : list[n == 1 ? 0 : static_cast<size_t>(d)];
    RT_CHECK(out[d] >= min_value, rt::Error::InvalidArgument, "%s: %s[%d] = %lld must be >= %d", op, name,
             n == 1 ? 0 : d, static_cast<long long>(out[d]), static_cast<int>(min_value));
    // Keeps every later index product inside int64 (sizes are below 2^31).
    RT_CHECK(out[d] <= 0x7fffffff, rt::Error::InvalidArgument, "%s: %s[%d] = %lld is too large", op, name, d,
             static_cast<long long>(out[d]));
  }
  return rt::Error::Ok;
}

// The output length of a window over `in` elements (ExecuTorch's
// _kernel_output_size_helper): C division (toward zero), and in ceil mode the
// last window must start inside the input or its left padding. Transposed:
// (in - 1) * stride - 2 * pad + dilation * (k - 1) + output_padding + 1.
inline int64_t window_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode,
                               bool transposed = false, int64_t output_padding = 0) {
  if (transposed) return (in - 1) * stride - 2 * pad + dilation * (k - 1) + output_padding + 1;
  const int64_t numerator = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t size = numerator / stride + 1;
  if (ceil_mode && (size - 1) * stride >= in + pad) --size;
  return size;
}

// An output shape computed in int64: every dim in [min, 2^31), the spatial
// (last `spatial`) dims at least 1 (ExecuTorch's output_size_is_valid).
inline rt::Error check_window_out(const char* op, const int64_t* sizes, int dim, int spatial, int32_t* out) {
  for (int d = 0; d < dim; ++d) {
    const int64_t min = d >= dim - spatial ? 1 : 0;
    if (sizes[d] < min || sizes[d] > 0x7fffffff) {
      int32_t shown[rt::kMaxDims];
      for (int k = 0; k < dim; ++k) {
        shown[k] = sizes[k] < INT32_MIN ? INT32_MIN : sizes[k] > INT32_MAX ? INT32_MAX : static_cast<int32_t>(sizes[k]);
      }
      return rt::fail(rt::Error::InvalidArgument, "%s: the input and window parameters give an invalid output shape %s",
                      op, ShapeStr(shown, dim).c_str());
    }
    out[d] = static_cast<int32_t>(sizes[d]);
  }
  return rt::Error::Ok;
}

}  // namespace kernels
