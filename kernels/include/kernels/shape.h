// Shape arithmetic and checks shared by the kernels (tensors are contiguous).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"
#include "rt/tensor.h"
#include "rt/value.h"

namespace kernels {

// "[2, 3, 4]" for failure reasons, without printf's width machinery.
class ShapeStr {
 public:
  ShapeStr(const int32_t* sizes, int dim) {
    size_t n = 0;
    buf_[n++] = '[';
    for (int d = 0; d < dim && d < rt::kMaxDims; ++d) {
      if (d > 0) {
        buf_[n++] = ',';
        buf_[n++] = ' ';
      }
      char digits[12];
      int k = 0;
      const bool negative = sizes[d] < 0;
      uint32_t v = negative ? 0u - static_cast<uint32_t>(sizes[d]) : static_cast<uint32_t>(sizes[d]);
      do {
        digits[k++] = static_cast<char>('0' + v % 10u);
        v /= 10u;
      } while (v != 0u);
      if (negative) digits[k++] = '-';
      while (k > 0) buf_[n++] = digits[--k];
    }
    buf_[n++] = ']';
    buf_[n] = '\0';
  }
  explicit ShapeStr(const rt::Tensor& t) : ShapeStr(t.sizes, t.dim) {}
  const char* c_str() const { return buf_; }

 private:
  char buf_[2 + rt::kMaxDims * 13 + 1];
};

inline bool same_shape(const rt::Tensor& a, const rt::Tensor& b) {
  if (a.dim != b.dim) return false;
  for (int d = 0; d < a.dim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

inline bool shape_equals(const rt::Tensor& t, const int32_t* sizes, int dim) {
  if (t.dim != dim) return false;
  for (int d = 0; d < dim; ++d) {
    if (t.sizes[d] != sizes[d]) return false;
  }
  return true;
}

inline rt::Error check_same_shape(const char* op, const char* a_name, const rt::Tensor& a, const char* b_name,
                                  const rt::Tensor& b) {
  RT_CHECK(same_shape(a, b), rt::Error::ShapeMismatch, "%s: %s shape %s != %s shape %s", op, a_name,
           ShapeStr(a).c_str(), b_name, ShapeStr(b).c_str());
  return rt::Error::Ok;
}

// `out` must have exactly the shape `sizes[0..dim)` the operator computes.
inline rt::Error check_out_shape(const char* op, const rt::Tensor& out, const int32_t* sizes, int dim) {
  RT_CHECK(shape_equals(out, sizes, dim), rt::Error::ShapeMismatch, "%s: out has shape %s, expected %s", op,
           ShapeStr(out).c_str(), ShapeStr(sizes, dim).c_str());
  return rt::Error::Ok;
}

inline rt::Error check_same_dtype(const char* op, const char* a_name, const rt::Tensor& a, const char* b_name,
                                  const rt::Tensor& b) {
  RT_CHECK(a.dtype == b.dtype, rt::Error::DtypeMismatch, "%s: %s dtype %s != %s dtype %s", op, a_name,
           rt::scalar_type_name(a.dtype), b_name, rt::scalar_type_name(b.dtype));
  return rt::Error::Ok;
}

// Wrap a possibly negative dim into [0, ndim). As in PyTorch, a 0-d tensor
// takes dims as if it had one dim when `scalar_as_1d` (dim 0 or -1).
inline rt::Error normalize_dim(const char* op, const char* name, int64_t dim, int ndim, int& out,
                               bool scalar_as_1d = false) {
  const int64_t n = (ndim == 0 && scalar_as_1d) ? 1 : ndim;
  RT_CHECK(dim >= -n && dim < n, rt::Error::InvalidArgument, "%s: %s = %d is out of range for %d dims", op, name,
           static_cast<int>(dim), ndim);
  out = static_cast<int>(dim < 0 ? dim + n : dim);
  return rt::Error::Ok;
}

// A dim_order argument (None, or 0..ndim-1 in order: the runtime holds only
// contiguous tensors). A 0-d tensor's default dim_order is empty.
inline rt::Error check_contiguous_dim_order(const char* op, const rt::ArrayRef<int64_t>* dim_order, int ndim) {
  if (dim_order == nullptr) return rt::Error::Ok;
  bool ok = dim_order->size == static_cast<size_t>(ndim);
  for (size_t i = 0; ok && i < dim_order->size; ++i) ok = (*dim_order)[i] == static_cast<int64_t>(i);
  RT_CHECK(ok, rt::Error::NotSupported, "%s: only the contiguous dim_order is supported", op);
  return rt::Error::Ok;
}

// The two tensors' bytes intersect (empty tensors intersect nothing).
inline bool overlaps(const rt::Tensor& a, const rt::Tensor& b) {
  if (a.nbytes == 0 || b.nbytes == 0) return false;
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  return a0 < b0 + b.nbytes && b0 < a0 + a.nbytes;
}

// Product of sizes[from..to).
inline size_t size_product(const int32_t* sizes, int from, int to) {
  size_t p = 1;
  for (int d = from; d < to; ++d) p *= static_cast<size_t>(sizes[d]);
  return p;
}

// For a dim d of t: elements before it (outer), along it and after it (inner).
struct DimSplit {
  size_t outer;
  size_t size;
  size_t inner;
};

inline DimSplit split_at(const rt::Tensor& t, int d) {
  return DimSplit{size_product(t.sizes, 0, d), static_cast<size_t>(t.sizes[d]), size_product(t.sizes, d + 1, t.dim)};
}

// Row-major element strides of a contiguous tensor.
inline void contiguous_strides(const int32_t* sizes, int dim, size_t* strides) {
  size_t s = 1;
  for (int d = dim - 1; d >= 0; --d) {
    strides[d] = s;
    s *= static_cast<size_t>(sizes[d]);
  }
}

}  // namespace kernels
