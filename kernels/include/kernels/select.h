// Dtype-selective build: which dtypes of a kernel this build compiles.
//
// The build generates kernel_select.h (into the build folder) with one mask
// per selected kernel, e.g.
//   #define KERNEL_SELECT_aten_bmm_out (rt::dtype_bit(rt::ScalarType::Float))
// from the dtypes the program uses. Without that header (host builds, tests)
// every dtype is compiled. Use as:
//   if constexpr (KERNEL_SELECTED(aten_bmm_out, Float)) { ... }
#pragma once

#include "rt/scalar_type.h"

#if __has_include("kernel_select.h")
#include "kernel_select.h"
#define KERNEL_SELECTED(fn, dtype) \
  ((KERNEL_SELECT_##fn & ::rt::dtype_bit(::rt::ScalarType::dtype)) != 0u)
#else
#define KERNEL_SELECTED(fn, dtype) true
#endif
