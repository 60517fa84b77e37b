// NumPy/PyTorch broadcasting: the common shape and each operand's strides
// over it (0 along broadcast dims), to walk with StridedLoop.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/copy.h"
#include "kernels/shape.h"
#include "rt/error.h"
#include "rt/tensor.h"

namespace kernels {

// Shapes align at the right; a size-1 (or missing) dim stretches.
inline bool broadcast_shape(const rt::Tensor& a, const rt::Tensor& b, int32_t* sizes, int& dim) {
  dim = a.dim > b.dim ? a.dim : b.dim;
  for (int i = 0; i < dim; ++i) {
    const int da = a.dim - dim + i;
    const int db = b.dim - dim + i;
    const int32_t sa = da >= 0 ? a.sizes[da] : 1;
    const int32_t sb = db >= 0 ? b.sizes[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) return false;
    sizes[i] = sa == 1 ? sb : sa;
  }
  return true;
}

// `in` can be broadcast to sizes[0..dim) (it never shrinks a dim).
inline bool broadcastable_to(const rt::Tensor& in, const int32_t* sizes, int dim) {
  if (in.dim > dim) return false;
  for (int i = 0; i < in.dim; ++i) {
    const int32_t s = in.sizes[i];
    const int32_t t = sizes[dim - in.dim + i];
    if (s != t && s != 1) return false;
  }
  return true;
}

// Element strides of `in` walked over the broadcast shape sizes[0..dim).
inline void broadcast_strides(const rt::Tensor& in, const int32_t* sizes, int dim, size_t* strides) {
  size_t s = 1;
  for (int i = dim - 1; i >= 0; --i) {
    const int d = in.dim - dim + i;
    if (d < 0) {
      strides[i] = 0;
      continue;
    }
    strides[i] = (in.sizes[d] == 1 && sizes[i] != 1) ? 0 : s;
    s *= static_cast<size_t>(in.sizes[d]);
  }
}

// out = f(a, b) as element offsets: operand 0 is out (contiguous), 1 is a, 2 is b.
inline rt::Error binary_loop(const char* op, const rt::Tensor& a, const rt::Tensor& b, const rt::Tensor& out,
                             StridedLoop<3>& loop) {
  int32_t sizes[rt::kMaxDims];
  int dim = 0;
  RT_CHECK(broadcast_shape(a, b, sizes, dim), rt::Error::ShapeMismatch, "%s: shapes %s and %s do not broadcast",
           op, ShapeStr(a).c_str(), ShapeStr(b).c_str());
  RT_TRY(check_out_shape(op, out, sizes, dim));
  loop.dim = dim;
  for (int d = 0; d < dim; ++d) loop.sizes[d] = static_cast<size_t>(sizes[d]);
  contiguous_strides(sizes, dim, loop.strides[0]);
  broadcast_strides(a, sizes, dim, loop.strides[1]);
  broadcast_strides(b, sizes, dim, loop.strides[2]);
  loop.collapse();
  return rt::Error::Ok;
}

}  // namespace kernels
