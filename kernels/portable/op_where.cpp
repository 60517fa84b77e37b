// aten::where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out)
//
// out = condition ? self : other, broadcasting all three. ExecuTorch's rules: condition is
// Bool or Byte (any non-zero byte selects self); promoteTypes(self, other) must be out's
// dtype; both operands are converted to it (through Float for Half and BFloat16; when
// both already have out's dtype, elements move unchanged).
#include <stdint.h>

#include "kernels/args.h"
#include "kernels/elementwise.h"

namespace kernels {
namespace {

template <typename C>
struct Select {
  C operator()(C x, C y, C c) const { return c ? x : y; }
};

// Operand names for failures.
inline constexpr const char* kNames[3] = {"self", "other", "condition"};

}  // namespace

#if KERNEL_BUILD_ALL || defined(KERNEL_SELECT_aten_where_self_out)
rt::Error aten_where_self_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  constexpr uint32_t kSelected = KERNEL_DTYPES(aten_where_self_out);
  Args a("aten::where.self_out", args, nargs);
  rt::Tensor *cond, *self, *other, *out;
  RT_TRY(a.count(5));
  RT_TRY(a.tensor(0, "condition", cond));
  RT_TRY(a.tensor(1, "self", self));
  RT_TRY(a.tensor(2, "other", other));
  RT_TRY(a.tensor(3, "out", out));
  RT_TRY(a.returned(4, out));
  const char* op = a.op();
  RT_CHECK(cond->dtype == ScalarType::Bool || cond->dtype == ScalarType::Byte, rt::Error::DtypeMismatch,
           "%s: condition must be Bool or Byte, got %s", op, rt::scalar_type_name(cond->dtype));
  ScalarType common = self->dtype;
  RT_CHECK(promote_types(self->dtype, other->dtype, common), rt::Error::DtypeMismatch,
           "%s: cannot promote %s with %s", op, rt::scalar_type_name(self->dtype),
           rt::scalar_type_name(other->dtype));
  RT_CHECK(common == out->dtype, rt::Error::DtypeMismatch, "%s: result dtype %s != out dtype %s", op,
           rt::scalar_type_name(common), rt::scalar_type_name(out->dtype));
  StridedLoop<4> loop;
  RT_TRY(ternary_loop(op, *self, *other, *cond, *out, loop));
  RT_TRY(check_selected<kSelected>(op, "condition", cond->dtype));
  if (self->dtype != out->dtype || other->dtype != out->dtype) {
    return dispatch_compute<kRealBoolDtypes, kSelected>(op, compute_type(common), [&](auto tag) {
      using C = typename decltype(tag)::type;
      return apply_ternary<C, kSelected>(op, *self, *other, *cond, *out, loop, kNames, Select<C>{});
    });
  }
  // Nothing to convert: move elements by width, test the condition's bytes.
  return dispatch_width<kSelected>(op, "out", out->dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    U* o = out->data_as<U>();
    const U* x = self->data_as<U>();
    const U* y = other->data_as<U>();
    const uint8_t* c = cond->data_as<uint8_t>();
    loop.run([&](const size_t* off, size_t n, const size_t* step) {
      U* on = o + off[0];
      const U* xn = x + off[1];
      const U* yn = y + off[2];
      const uint8_t* cn = c + off[3];
      for (size_t i = 0; i < n; ++i) on[i] = cn[i * step[3]] != 0 ? xn[i * step[1]] : yn[i * step[2]];
    });
    return rt::Error::Ok;
  });
}
#endif

}  // namespace kernels
