// Placeholder kernels and a test backend: host unit tests only, never in kernels/.
//
// Linked into the unit-test binaries instead of the generated registry, so the
// runtime's tests do not depend on which real kernels exist.
#include <string.h>

#include "rt/backend.h"
#include "rt/kernel.h"
#include "test_support.h"

namespace test {

rt::Value* const* g_recorded_args = nullptr;
size_t g_recorded_nargs = 0;

namespace {

rt::Error add_out(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  RT_CHECK(nargs == 5, rt::Error::InvalidArgument, "add.out takes 5 arguments, got %zu", nargs);
  RT_CHECK(args[0]->is_tensor() && args[1]->is_tensor() && args[3]->is_tensor() &&
               args[2]->is_scalar(),
           rt::Error::InvalidArgument, "add.out: wrong argument types");
  const rt::Tensor& a = *args[0]->u.t;
  const rt::Tensor& b = *args[1]->u.t;
  rt::Tensor& out = *args[3]->u.t;
  RT_CHECK(a.dtype == rt::ScalarType::Float && b.dtype == rt::ScalarType::Float &&
               out.dtype == rt::ScalarType::Float,
           rt::Error::DtypeMismatch, "add.out: the test kernel takes Float only");
  RT_CHECK(a.numel == out.numel && b.numel == out.numel, rt::Error::ShapeMismatch,
           "add.out: sizes differ");
  float alpha = static_cast<float>(args[2]->scalar_as_double());
  for (size_t i = 0; i < out.numel; ++i) {
    out.data_as<float>()[i] = a.data_as<float>()[i] + alpha * b.data_as<float>()[i];
  }
  return rt::Error::Ok;
}

rt::Error fail_always(rt::KernelContext&, rt::Value* const*, size_t) {
  return rt::fail(rt::Error::KernelFailed, "placeholder failure");
}

rt::Error retag(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  RT_CHECK(nargs >= 1, rt::Error::InvalidArgument, "retag takes a value");
  args[0]->tag = rt::Tag::Int;
  return rt::Error::Ok;
}

rt::Error record(rt::KernelContext&, rt::Value* const* args, size_t nargs) {
  g_recorded_args = args;
  g_recorded_nargs = nargs;
  return rt::Error::Ok;
}

rt::Error test_backend_init(const rt::BackendInitContext& ctx) {
  RT_CHECK(ctx.state_size >= sizeof(TestBackendState), rt::Error::Internal, "no state");
  auto* state = static_cast<TestBackendState*>(ctx.state);
  state->payload_size = ctx.payload_size;
  state->num_specs = ctx.num_specs;
  if (ctx.payload_size > 0 && ctx.payload[0] == 0xEE) {
    return rt::fail(rt::Error::DelegateFailed, "payload rejected");
  }
  return rt::Error::Ok;
}

rt::Error test_backend_execute(void* state, rt::KernelContext&, rt::Value* const* args,
                               size_t nargs) {
  RT_CHECK(nargs >= 2 && args[0]->is_tensor() && args[1]->is_tensor(),
           rt::Error::InvalidArgument, "TestBackend takes (tensor, tensor)");
  RT_CHECK(args[0]->u.t->nbytes == args[1]->u.t->nbytes, rt::Error::ShapeMismatch,
           "TestBackend: sizes differ");
  memcpy(args[1]->u.t->data, args[0]->u.t->data, args[0]->u.t->nbytes);
  static_cast<TestBackendState*>(state)->executions++;
  return rt::Error::Ok;
}

}  // namespace

const rt::Backend kTestBackend = {"TestBackend", sizeof(TestBackendState), test_backend_init,
                                  test_backend_execute, nullptr};

}  // namespace test

namespace rt {
const KernelEntry kKernelTable[] = {
    {"aten::add.out", test::add_out},
    {"test::fail.default", test::fail_always},
    {"test::fail", test::fail_always},
    {"test::retag.default", test::retag},
    {"test::record.default", test::record},
    // Loads only (the dim-order checks): a kernel the runtime lets take any one dim order.
    {"quantized_decomposed::quantize_per_tensor.out", test::record},
};
const size_t kKernelTableSize = sizeof(kKernelTable) / sizeof(kKernelTable[0]);
}  // namespace rt
