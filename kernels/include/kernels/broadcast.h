// NumPy/PyTorch broadcasting: the common shape and each operand's strides
// over it (0 along broadcast dims), to walk with StridedLoop (two operands:
// add/sub/mul/div; three: where, clamp.Tensor).
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

// Broadcast sizes[0..dim) further with `t` (in place; dim grows when t has more dims).
inline bool broadcast_with(int32_t* sizes, int& dim, const rt::Tensor& t) {
  const int n = t.dim > dim ? t.dim : dim;
  const int shift = n - dim;
  for (int i = dim - 1; i >= 0; --i) sizes[i + shift] = sizes[i];
  for (int i = 0; i < shift; ++i) sizes[i] = 1;
  dim = n;
  for (int i = 0; i < n; ++i) {
    const int dt = t.dim - n + i;
    const int32_t st = dt >= 0 ? t.sizes[dt] : 1;
    if (sizes[i] != st && sizes[i] != 1 && st != 1) return false;
    if (sizes[i] == 1) sizes[i] = st;
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

// out = f(a, b, c) as element offsets: operand 0 is out (contiguous), 1..3 are a, b, c
// (where: self, other, condition; clamp.Tensor: self, min, max).
inline rt::Error ternary_loop(const char* op, const rt::Tensor& a, const rt::Tensor& b, const rt::Tensor& c,
                              const rt::Tensor& out, StridedLoop<4>& loop) {
  int32_t sizes[rt::kMaxDims];
  int dim = 0;
  RT_CHECK(broadcast_shape(a, b, sizes, dim) && broadcast_with(sizes, dim, c), rt::Error::ShapeMismatch,
           "%s: shapes %s, %s and %s do not broadcast", op, ShapeStr(a).c_str(), ShapeStr(b).c_str(),
           ShapeStr(c).c_str());
  RT_TRY(check_out_shape(op, out, sizes, dim));
  loop.dim = dim;
  for (int d = 0; d < dim; ++d) loop.sizes[d] = static_cast<size_t>(sizes[d]);
  contiguous_strides(sizes, dim, loop.strides[0]);
  broadcast_strides(a, sizes, dim, loop.strides[1]);
  broadcast_strides(b, sizes, dim, loop.strides[2]);
  broadcast_strides(c, sizes, dim, loop.strides[3]);
  loop.collapse();
  return rt::Error::Ok;
}

}  // namespace kernels
