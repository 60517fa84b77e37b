// Moving elements: a fast byte copy and a strided N-d walk.
//
// Every data-movement kernel (split, cat, slice, permute, expand, the view
// copies) reduces to these two: contiguous runs go through copy_bytes, and a
// strided view of the input is walked run by run with StridedLoop.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rt/tensor.h"

#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#endif

namespace kernels {

// memcpy for tensors. On Helium: 32 bytes per low-overhead-loop iteration
// (two Q registers, post-incremented: 5 instructions), then one or two
// predicated 16-byte steps for the tail. GCC 12 adds pointer and counter
// bookkeeping to the intrinsic form, hence the few lines of assembly.
inline void copy_bytes(void* dst, const void* src, size_t n) {
#if defined(__ARM_FEATURE_MVE)
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* s = static_cast<const uint8_t*>(src);
  if (n >= 32) {
    const uint32_t blocks = static_cast<uint32_t>(n / 32);
    uint8x16_t t0, t1;
    __asm__ volatile(
        "\tdls lr, %[blocks]\n"
        "1:\n"
        "\tvldrb.u8 %q[t0], [%[s]], #16\n"
        "\tvldrb.u8 %q[t1], [%[s]], #16\n"
        "\tvstrb.8 %q[t0], [%[d]], #16\n"
        "\tvstrb.8 %q[t1], [%[d]], #16\n"
        "\tle lr, 1b\n"
        : [s] "+r"(s), [d] "+r"(d), [t0] "=&w"(t0), [t1] "=&w"(t1)
        : [blocks] "r"(blocks)
        : "lr", "memory");
    n %= 32;
  }
  while (n > 0) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n));
    vstrbq_p_u8(d, vldrbq_z_u8(s, p), p);
    const size_t step = n < 16 ? n : 16;
    s += step;
    d += step;
    n -= step;
  }
#else
  // memmove: a malformed program may plan overlapping tensors; the result is then garbage
  // but never undefined behaviour.
  if (n != 0) memmove(dst, src, n);
#endif
}

// An N-d walk over `dim` sizes with K operands, each with its own element
// strides. Adjacent dims that every operand walks contiguously are merged, so
// a plain copy becomes a single run and a transpose keeps only the dims that
// really move.
template <int K>
struct StridedLoop {
  int dim = 0;
  size_t sizes[rt::kMaxDims];
  size_t strides[K][rt::kMaxDims];

  // Drop size-1 dims and merge dims d-1, d where stride[d-1] == stride[d] * size[d]
  // for every operand.
  void collapse() {
    int n = 0;
    for (int d = 0; d < dim; ++d) {
      if (sizes[d] == 1) continue;
      if (n > 0) {
        bool mergeable = true;
        for (int k = 0; k < K; ++k) {
          if (strides[k][n - 1] != strides[k][d] * sizes[d]) mergeable = false;
        }
        if (mergeable) {
          sizes[n - 1] *= sizes[d];
          for (int k = 0; k < K; ++k) strides[k][n - 1] = strides[k][d];
          continue;
        }
      }
      sizes[n] = sizes[d];
      for (int k = 0; k < K; ++k) strides[k][n] = strides[k][d];
      ++n;
    }
    dim = n;
  }

  // fn(const size_t offsets[K], size_t count, const size_t steps[K]) for each
  // innermost run, in row-major order. Nothing is called when any size is 0.
  template <typename Fn>
  void run(Fn&& fn) const {
    for (int d = 0; d < dim; ++d) {
      if (sizes[d] == 0) return;
    }
    size_t offsets[K] = {};
    if (dim == 0) {
      size_t steps[K] = {};
      fn(offsets, size_t{1}, steps);
      return;
    }
    const int inner = dim - 1;
    size_t steps[K];
    for (int k = 0; k < K; ++k) steps[k] = strides[k][inner];
    size_t index[rt::kMaxDims] = {};
    while (true) {
      fn(offsets, sizes[inner], steps);
      int d = inner - 1;
      for (; d >= 0; --d) {
        ++index[d];
        for (int k = 0; k < K; ++k) offsets[k] += strides[k][d];
        if (index[d] < sizes[d]) break;
        for (int k = 0; k < K; ++k) offsets[k] -= strides[k][d] * sizes[d];
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }
};

// Copy a strided view of `src` (element strides `src_strides` over `sizes`)
// into contiguous `dst`. U is an unsigned type of the element's width.
template <typename U>
void gather(U* dst, const U* src, int dim, const int32_t* sizes, const size_t* src_strides) {
  StridedLoop<2> loop;
  loop.dim = dim;
  size_t s = 1;
  for (int d = dim - 1; d >= 0; --d) {
    loop.sizes[d] = static_cast<size_t>(sizes[d]);
    loop.strides[0][d] = s;
    loop.strides[1][d] = src_strides[d];
    s *= loop.sizes[d];
  }
  loop.collapse();
  loop.run([&](const size_t* off, size_t count, const size_t* step) {
    U* out = dst + off[0];
    const U* in = src + off[1];
    if (step[1] == 1) {
      copy_bytes(out, in, count * sizeof(U));
    } else {
      const size_t stride = step[1];
      for (size_t i = 0; i < count; ++i) out[i] = in[i * stride];
    }
  });
}

}  // namespace kernels
