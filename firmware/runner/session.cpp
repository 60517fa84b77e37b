// A loaded program and method (see session.h, docs/firmware.md).
#include "session.h"

#include <string.h>

#include "platform.h"
#include "console.h"

namespace runner {
namespace {

using rt::ul;

// The first output that is not a tensor, or num_outputs() when all are.
size_t first_non_tensor_output(const rt::Method& method) {
  size_t i = 0;
  while (i < method.num_outputs() && method.output(i)->is_tensor()) {
    ++i;
  }
  return i;
}

}  // namespace

rt::Error Session::load(rt::ConstBytes program_bytes) {
  unload();
  uint64_t start = platform_ticks();
  rt::Result<rt::Program> program = rt::Program::load(program_bytes.data, program_bytes.size);
  if (!program.ok()) {
    return program.error();
  }
  program_ = program.get();
  // The method keeps pointing at program_, so load it from the member, not the local. Its
  // scratch is the NPU arena when every delegate's fits there (a backend's prepare refuses a
  // scratch too small with OutOfMemory), else the scratch slot.
  rt::MethodMemory method_memory = {memory_.metadata, &memory_.planned, 1, memory_.npu_arena};
  rt::Result<rt::Method> method = rt::Error::OutOfMemory;
  if (memory_.npu_arena.size > 0) {
    method = rt::Method::load(program_, nullptr, method_memory);
  }
  if (!method.ok() && method.error() == rt::Error::OutOfMemory) {
    rt::clear_error();
    method_memory.scratch = memory_.scratch;
    method = rt::Method::load(program_, nullptr, method_memory);
  }
  if (!method.ok()) {
    return method.error();
  }
  scratch_in_use_ = method_memory.scratch;
  method_ = method.get();
  method_.set_observer(observer_, observer_context_);
  init_ticks_ = platform_ticks() - start;
  loaded_ = true;
  return rt::Error::Ok;
}

void Session::unload() {
  loaded_ = false;
  scratch_in_use_ = {nullptr, 0};
  program_ = rt::Program();
  method_ = rt::Method();
  init_ticks_ = 0;
}

rt::MemoryUse Session::memory_use() const {
  return loaded_ ? method_.memory_use() : rt::MemoryUse{0, memory_.metadata.size, 0,
                                                       memory_.planned.size};
}

rt::Error Session::input_tensor(size_t i, const rt::Tensor** tensor) const {
  RT_CHECK(loaded_, rt::Error::InvalidArgument, "no program loaded");
  RT_CHECK(i < method_.num_inputs(), rt::Error::InputMismatch, "no input %lu (%lu inputs)", ul(i),
           ul(method_.num_inputs()));
  const rt::Value* value = method_.input(i);
  RT_CHECK(value->is_tensor(), rt::Error::NotSupported,
           "input %lu is %s; only tensor inputs are supported", ul(i), rt::tag_name(value->tag));
  RT_CHECK(!value->u.t->constant, rt::Error::NotSupported, "input %lu is constant data", ul(i));
  *tensor = value->u.t;
  return rt::Error::Ok;
}

rt::Error Session::check_input(size_t i, const TensorDesc& desc) const {
  const rt::Tensor* tensor = nullptr;
  RT_TRY(input_tensor(i, &tensor));
  rt::ScalarType dtype = static_cast<rt::ScalarType>(desc.dtype);
  RT_CHECK(dtype == tensor->dtype, rt::Error::InputMismatch,
           "input %lu: dtype %s (%u) given, the program takes %s", ul(i),
           rt::scalar_type_name(dtype), desc.dtype, rt::scalar_type_name(tensor->dtype));
  bool same_shape = desc.ndim == tensor->dim;
  for (size_t d = 0; same_shape && d < tensor->dim; ++d) {
    same_shape = desc.sizes[d] == tensor->sizes[d];
  }
  size_t ndim = desc.ndim <= rt::kMaxDims ? desc.ndim : rt::kMaxDims;
  RT_CHECK(same_shape, rt::Error::InputMismatch,
           "input %lu: shape %s given, the program takes %s", ul(i),
           shape_text(desc.sizes, ndim).text, shape_text(tensor->sizes, tensor->dim).text);
  RT_CHECK(desc.nbytes == tensor->nbytes, rt::Error::InputMismatch,
           "input %lu: %lu bytes given, the program's tensor has %lu", ul(i), ul(desc.nbytes),
           ul(tensor->nbytes));
  return rt::Error::Ok;
}

rt::Error Session::write_input(size_t i, size_t offset, const uint8_t* data, size_t size) {
  const rt::Tensor* tensor = nullptr;
  RT_TRY(input_tensor(i, &tensor));
  RT_CHECK(offset <= tensor->nbytes && size <= tensor->nbytes - offset, rt::Error::InputMismatch,
           "input %lu: %lu bytes at offset %lu pass its %lu bytes", ul(i), ul(size), ul(offset),
           ul(tensor->nbytes));
  if (size > 0) {
    memcpy(static_cast<uint8_t*>(tensor->data) + offset, data, size);
  }
  return rt::Error::Ok;
}

// Before execute() (NotSupported: the program has a non-tensor output). After it, see
// output_tensor(): the runtime refuses moves that change a value's kind at load, so a change
// there is a kernel or delegate that broke a value; never read through what it left.
rt::Error Session::check_outputs() const {
  RT_CHECK(loaded_, rt::Error::InvalidArgument, "no program loaded");
  size_t i = first_non_tensor_output(method_);
  RT_CHECK(i == method_.num_outputs(), rt::Error::NotSupported,
           "output %lu is %s; only tensor outputs are supported", ul(i),
           rt::tag_name(method_.output(i)->tag));
  return rt::Error::Ok;
}

bool Session::outputs_are_tensors() const {
  return loaded_ && first_non_tensor_output(method_) == method_.num_outputs();
}

rt::Error Session::output_tensor(size_t i, const rt::Tensor** tensor) const {
  RT_CHECK(loaded_, rt::Error::InvalidArgument, "no program loaded");
  RT_CHECK(i < method_.num_outputs(), rt::Error::InvalidArgument, "no output %lu (%lu outputs)",
           ul(i), ul(method_.num_outputs()));
  const rt::Value* value = method_.output(i);
  RT_CHECK(value->is_tensor(), rt::Error::Internal,
           "output %lu is %s after execute(), no longer a tensor", ul(i),
           rt::tag_name(value->tag));
  *tensor = value->u.t;
  return rt::Error::Ok;
}

rt::Error Session::execute(uint32_t iterations, RunTiming* timing) {
  *timing = RunTiming{0, 0, 0, 0, 0};
  RT_CHECK(loaded_, rt::Error::InvalidArgument, "no program loaded");
  for (uint32_t it = 0; it < iterations; ++it) {
    uint64_t start = platform_ticks();
    rt::Error err = method_.execute();
    uint64_t ticks = platform_ticks() - start;
    timing->last_ticks = ticks;
    if (err != rt::Error::Ok) {
      if (iterations > 1) {
        rt::add_context("iteration %lu of %lu", ul(it + 1), ul(iterations));
      }
      timing->total_ticks += ticks;  // the failing run's time still counts
      return err;
    }
    timing->total_ticks += ticks;
    timing->min_ticks = it == 0 || ticks < timing->min_ticks ? ticks : timing->min_ticks;
    timing->max_ticks = ticks > timing->max_ticks ? ticks : timing->max_ticks;
    timing->iterations = it + 1;
  }
  return rt::Error::Ok;
}

}  // namespace runner
