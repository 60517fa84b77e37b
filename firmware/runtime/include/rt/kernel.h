// The CPU kernel ABI and the registration table the build generates.
//
// A KernelCall in the program passes the operator's schema arguments in
// schema order (kwarg-only ones such as `out` included), followed by its
// return values (which alias the `out` arguments). Example, aten::bmm.out:
//   args = [self, mat2, out, <return = out>], nargs = 4.
// A kernel checks nargs, tags, dtypes and shapes, computes into `out`, and
// returns Error::Ok or rt::fail(code, reason).
#pragma once

#include <stddef.h>

#include "rt/error.h"
#include "rt/value.h"

namespace rt {

// Per-call context. `scratch` is temporary memory a kernel may use for the
// duration of one call (may be null/0 when the runner gives none).
struct KernelContext {
  uint8_t* scratch;
  size_t scratch_size;
};

using KernelFn = Error (*)(KernelContext& ctx, Value* const* args, size_t nargs);

// `name` is "<namespace>::<op>.<overload>" as the program's operator table
// spells it, e.g. "aten::bmm.out" ("aten::foo" when the overload is empty).
struct KernelEntry {
  const char* name;
  KernelFn fn;
};

// Generated per build (kernel_registry.cpp in the build folder) from the
// program's operator table and kernels/kernels.yaml.
extern const KernelEntry kKernelTable[];
extern const size_t kKernelTableSize;

}  // namespace rt
