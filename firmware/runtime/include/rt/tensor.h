// A tensor as kernels and delegates see it: contiguous, static shape.
//
// The runtime builds these at load time from the program's tensor records
// (sizes copied and checked, data pointing into a planned arena or into the
// program's constant data). Kernels never resize: shapes are static and the
// runtime refuses programs with dynamic shapes or non-default dim orders.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "contract.h"  // generated from firmware/contract.yaml

#include "rt/scalar_type.h"

namespace rt {

constexpr int kMaxDims = contract::kMaxDims;

struct Tensor {
  void* data;               // never null for a loaded tensor (unless numel == 0)
  size_t numel;             // product of sizes (1 for a 0-dim tensor)
  size_t nbytes;            // numel * element_size(dtype)
  int32_t sizes[kMaxDims];  // sizes[0..dim-1], all >= 0
  ScalarType dtype;
  uint8_t dim;
  bool constant;  // data is the program's own (read-only) bytes: set_input refuses it
  // The order the dimensions lie in memory, outermost first (0..dim-1: row-major, what the
  // CPU kernels assume; 0,2,3,1: channels-last, a program exported from NHWC inputs).
  uint8_t dim_order[kMaxDims];

  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
  // Size of dimension d; negative d counts from the end (-1 = last).
  int32_t size(int d) const { return sizes[d < 0 ? d + dim : d]; }
};

}  // namespace rt
