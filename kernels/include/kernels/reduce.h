// Reductions over a list of dims (sum, mean): the output shape check and the
// walk over each output's input elements.
//
// ExecuTorch's order, which float results depend on: each output starts from
// its first input element and adds the others in increasing flat index order.
// An empty dim list (or None) reduces every dim.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/copy.h"
#include "kernels/shape.h"
#include "rt/error.h"
#include "rt/tensor.h"

namespace kernels {

struct Reduction {
  StridedLoop<1> kept;     // over the output's elements, strides into the input
  StridedLoop<1> reduced;  // over one output's input elements
  size_t count;            // input elements per output

  // fn(size_t out_index, size_t in_offset) once per output, in order; walk()
  // gives the input offsets of one output relative to in_offset.
  template <typename Fn>
  void for_each_output(Fn&& fn) const {
    size_t out_index = 0;
    kept.run([&](const size_t* off, size_t n, const size_t* step) {
      for (size_t i = 0; i < n; ++i) fn(out_index++, off[0] + i * step[0]);
    });
  }
  // fn(size_t offset) for each input element of one output, first to last.
  template <typename Fn>
  void walk(size_t base, Fn&& fn) const {
    reduced.run([&](const size_t* off, size_t n, const size_t* step) {
      for (size_t i = 0; i < n; ++i) fn(base + off[0] + i * step[0]);
    });
  }
};

// Validates dims (unique, in range; a 0-d input takes 0 and -1) and out's
// shape for `keepdim`, and prepares the walks.
inline rt::Error make_reduction(const char* op, const rt::Tensor& in, const Optional<rt::ArrayRef<int64_t>>& dims,
                                bool keepdim, const rt::Tensor& out, Reduction& r) {
  bool reduce[rt::kMaxDims] = {};
  const bool all = !dims.present || dims.value.size == 0;
  for (size_t i = 0; !all && i < dims.value.size; ++i) {
    int d = 0;
    RT_TRY(normalize_dim(op, "dim", dims.value[i], in.dim, d, true));
    if (in.dim == 0) continue;
    RT_CHECK(!reduce[d], rt::Error::InvalidArgument, "%s: dim %d appears twice", op, d);
    reduce[d] = true;
  }
  size_t strides[rt::kMaxDims];
  contiguous_strides(in.sizes, in.dim, strides);
  int32_t out_sizes[rt::kMaxDims];
  int out_dim = 0;
  r.kept.dim = 0;
  r.reduced.dim = 0;
  r.count = 1;
  for (int d = 0; d < in.dim; ++d) {
    const size_t size = static_cast<size_t>(in.sizes[d]);
    if (all || reduce[d]) {
      r.reduced.sizes[r.reduced.dim] = size;
      r.reduced.strides[0][r.reduced.dim++] = strides[d];
      r.count *= size;
      if (keepdim) out_sizes[out_dim++] = 1;
    } else {
      r.kept.sizes[r.kept.dim] = size;
      r.kept.strides[0][r.kept.dim++] = strides[d];
      out_sizes[out_dim++] = in.sizes[d];
    }
  }
  RT_TRY(check_out_shape(op, out, out_sizes, out_dim));
  r.kept.collapse();
  r.reduced.collapse();
  return rt::Error::Ok;
}

}  // namespace kernels
