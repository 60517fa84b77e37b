// Method loading and execution on programs built value by value, plus real
// ExecuTorch programs from the pytest fixture (--programs DIR).
#include <string.h>

#include "rt/backend.h"
#include "rt/method.h"
#include "rt/program.h"
#include "test_harness.h"
#include "test_support.h"

using rt::ScalarType;
using test::Bytes;
using test::ProgramBuilder;

namespace {

struct Memory {
  alignas(16) uint8_t metadata[1 << 16];
  alignas(16) uint8_t planned[1 << 16];
  rt::Span arena;
  rt::MethodMemory method_memory(size_t metadata_size = sizeof(metadata),
                                 size_t planned_size = sizeof(planned)) {
    arena = rt::Span{planned, planned_size};
    return rt::MethodMemory{{metadata, metadata_size}, &arena, 1, {nullptr, 0}};
  }
};

Memory g_memory;

// out = a + 2 * b over [2, 3] floats: values a=0, b=1, alpha=2, out=3.
ProgramBuilder add_program() {
  ProgramBuilder p;
  int a = p.planned(ScalarType::Float, {2, 3}, 0);
  int b = p.planned(ScalarType::Float, {2, 3}, 32);
  int alpha = p.int_value(2);
  int out = p.planned(ScalarType::Float, {2, 3}, 64);
  p.kernel_call(p.op("aten::add", "out"), {a, b, alpha, out, out});
  p.set_inputs({a, b});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 96});
  return p;
}

rt::Result<rt::Method> load_method(const Bytes& bytes, const rt::MethodMemory& memory,
                                   rt::Result<rt::Program>* program_out = nullptr) {
  static rt::Result<rt::Program> program = rt::Error::Internal;
  program = rt::Program::load(bytes.data(), bytes.size());
  if (program_out != nullptr) {
    *program_out = program;
  }
  if (!program.ok()) {
    return program.error();
  }
  return rt::Method::load(program.get(), nullptr, memory);
}

}  // namespace

TEST(add_program_runs) {
  Bytes bytes = add_program().finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  rt::Method& m = method.get();
  CHECK_EQ(m.num_inputs(), 2);
  CHECK_EQ(m.num_outputs(), 1);
  float a[6] = {1, 2, 3, 4, 5, 6};
  float b[6] = {10, 20, 30, 40, 50, 60};
  CHECK_OK(m.set_input(0, a, sizeof(a)));
  CHECK_OK(m.set_input(1, b, sizeof(b)));
  CHECK_OK(m.execute());
  const rt::Tensor& out = *m.output(0)->u.t;
  CHECK_EQ(out.dim, 2);
  CHECK_EQ(out.sizes[1], 3);
  for (int i = 0; i < 6; ++i) {
    CHECK(out.data_as<float>()[i] == a[i] + 2 * b[i]);
  }
  CHECK(m.memory_use().metadata_used > 0);
  CHECK_EQ(m.memory_use().planned_used, 96);
  CHECK(m.input(2) == nullptr);
  CHECK(m.output(1) == nullptr);
}

TEST(set_input_checks_size_and_index) {
  Bytes bytes = add_program().finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  float a[5] = {};
  CHECK_ERROR(method.get().set_input(0, a, sizeof(a)), InputMismatch);
  CHECK_ERROR(method.get().set_input(2, a, sizeof(a)), InputMismatch);
}

TEST(metadata_arena_too_small_reports_sizes) {
  Bytes bytes = add_program().finish();
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  CHECK_OK(program);
  rt::Result<size_t> needed = rt::Method::metadata_bytes_needed(program.get(), nullptr);
  CHECK_OK(needed);
  CHECK(needed.get() > 64);
  CHECK_ERROR(rt::Method::load(program.get(), nullptr, g_memory.method_memory(64)), OutOfMemory);
  CHECK_REASON("metadata arena too small");
  CHECK_REASON("the arena has 64");
  // Exactly the bytes it asked for are enough.
  CHECK_OK(rt::Method::load(program.get(), nullptr, g_memory.method_memory(needed.get())));
  CHECK_ERROR(rt::Method::load(program.get(), nullptr, g_memory.method_memory(0)), OutOfMemory);
}

TEST(planned_arena_too_small_reports_sizes) {
  Bytes bytes = add_program().finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory(sizeof(g_memory.metadata), 95)),
              OutOfMemory);
  CHECK_REASON("planned memory too small");
  CHECK_REASON("needs 96 bytes");
  CHECK_REASON("have 95");
}

TEST(planned_memory_in_two_arenas) {
  ProgramBuilder p = add_program();
  p.set_buffer_sizes({0, 96, 200});
  Bytes bytes = p.finish();
  static uint8_t small[128];
  static uint8_t large[256];
  rt::Span arenas[2] = {{small, sizeof(small)}, {large, sizeof(large)}};
  rt::MethodMemory memory = {{g_memory.metadata, sizeof(g_memory.metadata)}, arenas, 2, {}};
  rt::Result<rt::Method> method = load_method(bytes, memory);
  CHECK_OK(method);
  CHECK_EQ(method.get().memory_use().planned_used, 296);
  CHECK_EQ(method.get().memory_use().planned_size, 384);
}

TEST(unknown_operator_is_named) {
  ProgramBuilder p = add_program();
  p.op("aten::nope", "out");
  Bytes bytes = p.finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), OperatorMissing);
  CHECK_REASON("aten::nope.out");
}

TEST(unknown_operator_wins_over_small_arena) {
  ProgramBuilder p = add_program();
  p.op("my_ns::thing", "");
  Bytes bytes = p.finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory(16)), OperatorMissing);
  CHECK_REASON("my_ns::thing:");
}

TEST(real_program_with_missing_kernels_names_the_first) {
  Bytes bytes = test::fixture_program("bmm.pte");
  CHECK(bytes.size() > 0);
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), OperatorMissing);
  CHECK_REASON("aten::bmm.out");
}

TEST(real_add_program_runs_with_placeholder_kernel) {
  // add.pte: x + y over [2, 3] floats (aten::add.out, alpha=1), made by ExecuTorch.
  Bytes bytes = test::fixture_program("add.pte");
  CHECK(bytes.size() > 0);
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  float x[6] = {1, 2, 3, 4, 5, 6};
  float y[6] = {0.5f, 0.25f, 0, -1, -2, 8};
  CHECK_OK(method.get().set_input(0, x, sizeof(x)));
  CHECK_OK(method.get().set_input(1, y, sizeof(y)));
  CHECK_OK(method.get().execute());
  const rt::Tensor& out = *method.get().output(0)->u.t;
  for (int i = 0; i < 6; ++i) {
    CHECK(out.data_as<float>()[i] == x[i] + y[i]);
  }
}

TEST(missing_backend_is_named) {
  rt::clear_backends();
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int y = p.planned(ScalarType::Char, {16}, 16);
  p.delegate_call(p.delegate("EthosUBackend", {1, 2, 3}, {}), {x, y});
  p.set_inputs({x});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), BackendMissing);
  CHECK_REASON("'EthosUBackend'");
}

TEST(registered_backend_gets_payload_specs_and_runs) {
  rt::clear_backends();
  CHECK_OK(rt::register_backend(&test::kTestBackend));
  CHECK_ERROR(rt::register_backend(&test::kTestBackend), InvalidArgument);
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int y = p.planned(ScalarType::Char, {16}, 16);
  p.delegate_call(p.delegate("TestBackend", {1, 2, 3, 4, 5}, {{"key", {7}}, {"other", {}}}),
                  {x, y});
  p.set_inputs({x});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  int8_t input[16];
  for (int i = 0; i < 16; ++i) input[i] = static_cast<int8_t>(i - 8);
  CHECK_OK(method.get().set_input(0, input, sizeof(input)));
  CHECK_OK(method.get().execute());
  CHECK(memcmp(method.get().output(0)->u.t->data, input, sizeof(input)) == 0);
  rt::clear_backends();
}

TEST(backend_init_failure_names_the_delegate) {
  rt::clear_backends();
  CHECK_OK(rt::register_backend(&test::kTestBackend));
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  p.delegate_call(p.delegate("TestBackend", {0xEE}, {}), {x, x});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), DelegateFailed);
  CHECK_REASON("delegate 0 (TestBackend) init: payload rejected");
  rt::clear_backends();
}

namespace {

// A backend with a prepare hook: remembers what the last call site passed, refuses a call
// whose first argument is not a tensor.
struct PrepareRecord {
  size_t calls;
  size_t nargs;
  long first_value;
  size_t scratch_size;
  void* state;
};
PrepareRecord g_prepared;

rt::Error preparing_prepare(const rt::BackendPrepareContext& ctx) {
  ++g_prepared.calls;
  g_prepared.nargs = ctx.nargs;
  g_prepared.first_value = ctx.nargs > 0 ? static_cast<long>(ctx.args[0] - ctx.values) : -1;
  g_prepared.scratch_size = ctx.scratch_size;
  g_prepared.state = ctx.state;
  RT_CHECK(ctx.nargs > 0 && ctx.args[0]->is_tensor(), rt::Error::DtypeMismatch,
           "input 0 is not a tensor");
  return rt::Error::Ok;
}

rt::Backend preparing_backend() {
  rt::Backend b = test::kTestBackend;
  b.id = "PreparingBackend";
  b.prepare = preparing_prepare;
  return b;
}

}  // namespace

TEST(backend_prepare_gets_each_call_site_at_load) {
  rt::clear_backends();
  static rt::Backend backend = preparing_backend();
  CHECK_OK(rt::register_backend(&backend));
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int y = p.planned(ScalarType::Char, {16}, 16);
  int d = p.delegate("PreparingBackend", {1}, {});
  p.delegate_call(d, {x, y});
  p.delegate_call(d, {y, x});
  p.set_inputs({x});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  g_prepared = PrepareRecord{};
  alignas(16) static uint8_t scratch[64];
  rt::MethodMemory memory = g_memory.method_memory();
  memory.scratch = rt::Span{scratch, sizeof(scratch)};
  rt::Result<rt::Method> method = load_method(bytes, memory);
  CHECK_OK(method);
  CHECK_EQ(g_prepared.calls, 2);  // once per DelegateCall, before any execute
  CHECK_EQ(g_prepared.nargs, 2);
  CHECK_EQ(g_prepared.first_value, y);
  CHECK_EQ(g_prepared.scratch_size, sizeof(scratch));
  CHECK(g_prepared.state != nullptr);
  CHECK_OK(method.get().execute());
  CHECK_EQ(g_prepared.calls, 2);
  rt::clear_backends();
}

TEST(backend_prepare_failure_names_delegate_and_instruction) {
  rt::clear_backends();
  static rt::Backend backend = preparing_backend();
  CHECK_OK(rt::register_backend(&backend));
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int n = p.int_value(3);
  int d = p.delegate("PreparingBackend", {1}, {});
  p.delegate_call(d, {x, x});
  p.delegate_call(d, {n, x});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), DtypeMismatch);
  CHECK_REASON("delegate 0 (PreparingBackend) at instruction 1: input 0 is not a tensor");
  rt::clear_backends();
}

TEST(backend_without_prepare_loads_as_before) {
  rt::clear_backends();
  CHECK_OK(rt::register_backend(&test::kTestBackend));
  CHECK(test::kTestBackend.prepare == nullptr);
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int n = p.int_value(3);
  p.delegate_call(p.delegate("TestBackend", {1}, {}), {n, x});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  CHECK_OK(load_method(bytes, g_memory.method_memory()));
  rt::clear_backends();
}

TEST(backend_registry_is_fixed_size) {
  rt::clear_backends();
  static rt::Backend backends[rt::kMaxBackends + 1];
  static char names[rt::kMaxBackends + 1][8];
  for (size_t i = 0; i <= rt::kMaxBackends; ++i) {
    snprintf(names[i], sizeof(names[i]), "B%zu", i);
    backends[i] = test::kTestBackend;
    backends[i].id = names[i];
  }
  for (size_t i = 0; i < rt::kMaxBackends; ++i) CHECK_OK(rt::register_backend(&backends[i]));
  CHECK_ERROR(rt::register_backend(&backends[rt::kMaxBackends]), OutOfMemory);
  CHECK_EQ(rt::num_backends(), rt::kMaxBackends);
  rt::clear_backends();
}

TEST(kernel_failure_names_instruction_and_operator) {
  ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {4}, 0);
  p.kernel_call(p.op("test::fail", "default"), {x});
  p.set_buffer_sizes({0, 16});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  CHECK_ERROR(method.get().execute(), KernelFailed);
  CHECK_REASON("instruction 0 (test::fail.default): placeholder failure");
}

TEST(int_list_items_are_value_indices) {
  ProgramBuilder p;
  int three = p.int_value(3);
  int minus_one = p.int_value(-1);
  int list = p.int_list({three, minus_one, three});
  int doubles = p.double_list({0.5, -2.25});
  int x = p.planned(ScalarType::Float, {4}, 0);
  int none = p.none();
  int tensors = p.tensor_list({x, x});
  int optional = p.optional_tensor_list({x, none, -1});
  p.kernel_call(p.op("test::record", "default"), {list, doubles, tensors, optional});
  p.set_buffer_sizes({0, 16});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  CHECK_OK(method.get().execute());
  CHECK_EQ(test::g_recorded_nargs, 4);
  const rt::Value& ints = *test::g_recorded_args[0];
  CHECK(ints.is_int_list());
  CHECK_EQ(ints.u.int_list.size, 3);
  CHECK_EQ(ints.u.int_list[0], 3);
  CHECK_EQ(ints.u.int_list[1], -1);
  CHECK_EQ(ints.u.int_list[2], 3);
  CHECK(test::g_recorded_args[1]->u.double_list[1] == -2.25);
  const rt::Value& list_of_tensors = *test::g_recorded_args[2];
  CHECK(list_of_tensors.is_tensor_list());
  CHECK_EQ(list_of_tensors.u.tensor_list.size, 2);
  CHECK(list_of_tensors.u.tensor_list[0]->numel == 4);
  const rt::Value& optionals = *test::g_recorded_args[3];
  CHECK(optionals.tag == rt::Tag::OptionalTensorList);
  CHECK(optionals.u.tensor_list[0] != nullptr);
  CHECK(optionals.u.tensor_list[1] == nullptr);
  CHECK(optionals.u.tensor_list[2] == nullptr);
}

TEST(int_list_item_must_be_an_int) {
  ProgramBuilder p;
  int d = p.double_value(1.5);
  int list = p.int_list({d});
  p.kernel_call(p.op("test::record", "default"), {list});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("value 1: list item: value 0 is Double, not Int");
  ProgramBuilder q;
  int list2 = q.int_list({7});
  q.kernel_call(q.op("test::record", "default"), {list2});
  CHECK_ERROR(load_method(q.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("value 0: list item: value 7 out of range");
}

TEST(tensor_list_item_must_be_a_tensor) {
  ProgramBuilder p;
  int i = p.int_value(1);
  p.tensor_list({i});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("value 0 is Int, not Tensor");
}

TEST(value_with_missing_content_is_refused) {
  ProgramBuilder p;
  p.empty_value();
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("value 0 has no content");
}

TEST(unsupported_tensors_are_refused_with_reasons) {
  struct Case {
    void (*tweak)(ProgramBuilder::TensorSpec&);
    rt::Error code;
    const char* reason;
  };
  const Case cases[] = {
      {[](ProgramBuilder::TensorSpec& t) { t.dynamism = 1; }, rt::Error::NotSupported,
       "dynamic shapes"},
      {[](ProgramBuilder::TensorSpec& t) { t.dim_order = {1, 1}; }, rt::Error::InvalidProgram,
       "dim order is not a permutation"},
      {[](ProgramBuilder::TensorSpec& t) { t.dim_order = {0}; }, rt::Error::InvalidProgram,
       "dim order has 1 entries"},
      {[](ProgramBuilder::TensorSpec& t) { t.raw_dtype = 9; }, rt::Error::NotSupported,
       "dtype 9"},
      {[](ProgramBuilder::TensorSpec& t) { t.raw_dtype = 100; }, rt::Error::NotSupported,
       "dtype 100"},
      {[](ProgramBuilder::TensorSpec& t) { t.sizes = {2, -3}; }, rt::Error::InvalidProgram,
       "has size -3"},
      {[](ProgramBuilder::TensorSpec& t) { t.sizes = {1, 1, 1, 1, 1, 1, 1, 1, 1}; },
       rt::Error::NotSupported, "9 dimensions"},
      {[](ProgramBuilder::TensorSpec& t) { t.sizes = {65536, 65536}; }, rt::Error::NotSupported,
       "elements"},
      {[](ProgramBuilder::TensorSpec& t) { t.memory_id = 2; }, rt::Error::InvalidProgram,
       "memory id 2"},
      {[](ProgramBuilder::TensorSpec& t) { t.memory_id = 0; }, rt::Error::InvalidProgram,
       "memory id 0"},
      {[](ProgramBuilder::TensorSpec& t) { t.offset = 1000; }, rt::Error::InvalidProgram,
       "value 0: 24 bytes at 1000 overrun planned buffer 1"},
      {[](ProgramBuilder::TensorSpec& t) { t.offset = uint64_t{1} << 40; },
       rt::Error::InvalidProgram, "overrun planned buffer"},
      {[](ProgramBuilder::TensorSpec& t) { t.offset = 2; }, rt::Error::InvalidProgram,
       "not aligned"},
      {[](ProgramBuilder::TensorSpec& t) { t.planned = false; }, rt::Error::NotSupported,
       "no planned memory and no constant data"},
      {[](ProgramBuilder::TensorSpec& t) { t.data_buffer_idx = 1; }, rt::Error::NotSupported,
       "initial data"},
      {[](ProgramBuilder::TensorSpec& t) {
         t.planned = false;
         t.data_buffer_idx = 5;
       },
       rt::Error::InvalidProgram, "constant buffer 5 out of range"},
  };
  for (const Case& c : cases) {
    ProgramBuilder p;
    ProgramBuilder::TensorSpec spec;
    spec.sizes = {2, 3};
    c.tweak(spec);
    p.tensor(spec);
    p.set_buffer_sizes({0, 64});
    rt::clear_error();
    rt::Error err = load_method(p.finish(), g_memory.method_memory()).error();
    if (err != c.code || strstr(rt::last_error_reason(), c.reason) == nullptr) {
      char what[320];
      snprintf(what, sizeof(what), "expected %s \"%s\", got %s \"%s\"", rt::error_name(c.code),
               c.reason, rt::error_name(err), rt::last_error_reason());
      test::record_failure(__FILE__, __LINE__, what);
    }
  }
}

// A [1, 2, 2, 3] tensor laid out channels-last (dim order 0, 2, 3, 1), as a program exported
// from NHWC inputs takes it; `twin_order` gives the second tensor's.
ProgramBuilder reordered_program(const char* op, const char* overload,
                                 std::vector<uint8_t> twin_order) {
  ProgramBuilder p;
  ProgramBuilder::TensorSpec nhwc;
  nhwc.sizes = {1, 2, 2, 3};
  nhwc.dim_order = {0, 2, 3, 1};
  int a = p.tensor(nhwc);
  ProgramBuilder::TensorSpec twin = nhwc;
  twin.offset = 64;
  twin.dim_order = std::move(twin_order);
  int out = p.tensor(twin);
  p.kernel_call(p.op(op, overload), {a, out});
  p.set_inputs({a});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 128});
  return p;
}

TEST(channels_last_tensor_loads_with_its_order) {
  ProgramBuilder p;
  ProgramBuilder::TensorSpec nhwc;
  nhwc.sizes = {1, 2, 2, 3};
  nhwc.dim_order = {0, 2, 3, 1};
  int a = p.tensor(nhwc);
  p.set_inputs({a});
  p.set_outputs({a});
  p.set_buffer_sizes({0, 64});
  Bytes bytes = p.finish();  // the method reads the program in place
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  const rt::Tensor& t = *method.get().input(0)->u.t;
  CHECK(t.dim_order[1] == 2 && t.dim_order[2] == 3 && t.dim_order[3] == 1);
  CHECK_EQ(t.sizes[1], 2);  // sizes stay the logical (NCHW) ones
}

TEST(kernel_reading_a_channels_last_tensor_row_major_is_refused) {
  Bytes bytes = reordered_program("aten::add", "out", {0, 2, 3, 1}).finish();
  CHECK_ERROR(load_method(bytes, g_memory.method_memory()), NotSupported);
  CHECK_REASON("instruction 0: aten::add.out takes a tensor in a non-row-major dim order");
}

TEST(elementwise_kernel_takes_tensors_in_one_dim_order) {
  const char* quantize = "quantized_decomposed::quantize_per_tensor";
  CHECK_OK(load_method(reordered_program(quantize, "out", {0, 2, 3, 1}).finish(),
                       g_memory.method_memory()));
  // Its output row-major while its input is channels-last: elements would move.
  CHECK_ERROR(load_method(reordered_program(quantize, "out", {}).finish(),
                          g_memory.method_memory()),
              NotSupported);
  CHECK_REASON("quantize_per_tensor.out takes a tensor in a non-row-major dim order");
}

TEST(constant_tensor_reads_inline_constant_buffer) {
  ProgramBuilder p;
  float weights[4] = {1.5f, -2, 3, 0.25f};
  int w = p.constant(ScalarType::Float, {4}, weights, sizeof(weights));
  int x = p.planned(ScalarType::Float, {4}, 0);
  int alpha = p.double_value(1.0);
  int out = p.planned(ScalarType::Float, {4}, 16);
  p.kernel_call(p.op("aten::add", "out"), {x, w, alpha, out, out});
  p.set_inputs({x});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  float input[4] = {1, 1, 1, 1};
  CHECK_OK(method.get().set_input(0, input, sizeof(input)));
  CHECK_OK(method.get().execute());
  for (int i = 0; i < 4; ++i) {
    CHECK(method.get().output(0)->u.t->data_as<float>()[i] == 1 + weights[i]);
  }
}

TEST(constant_larger_than_its_buffer_is_refused) {
  ProgramBuilder p;
  float weights[2] = {1, 2};
  p.constant(ScalarType::Float, {4}, weights, sizeof(weights));
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("value 0: constant buffer 1 holds 8 bytes, the tensor needs 16");
}

TEST(instruction_indices_are_checked) {
  {
    ProgramBuilder p;
    int x = p.planned(ScalarType::Float, {4}, 0);
    p.kernel_call(p.op("test::record", "default"), {x, 99});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("instruction 0: argument value 99 out of range (1)");
  }
  {
    ProgramBuilder p;
    p.op("test::record", "default");
    p.kernel_call(3, {});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("operator 3 out of range");
  }
  {
    ProgramBuilder p;
    p.delegate_call(0, {});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("delegate 0 out of range");
  }
  {
    ProgramBuilder p;
    p.int_value(1);
    p.move(0, 5);
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  }
  {
    ProgramBuilder p;
    int c = p.bool_value(false);
    p.jump_false(c, 7);
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("jump to 7 out of range");
  }
  {
    ProgramBuilder p;
    p.free_value(-1);
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  }
  {
    ProgramBuilder p;
    p.int_value(1);
    p.set_inputs({1});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("input 0: value 1 out of range");
  }
}

TEST(move_jump_and_free_execute) {
  ProgramBuilder p;
  int a = p.int_value(5);
  int b = p.int_value(9);
  int yes = p.bool_value(true);
  int no = p.bool_value(false);
  int t = p.planned(ScalarType::Float, {4}, 0);
  p.move(a, b);        // 0: b = 5
  p.jump_false(yes, 0);  // 1: taken only when false: falls through
  p.jump_false(no, 4);   // 2: jumps over 3
  p.kernel_call(p.op("test::fail", "default"), {});  // 3: never runs
  p.free_value(t);     // 4
  p.set_outputs({b});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  CHECK_OK(method.get().execute());
  CHECK(method.get().output(0)->is_int());
  CHECK_EQ(method.get().output(0)->u.i, 5);
}

TEST(endless_loop_stops_with_a_reason) {
  ProgramBuilder p;
  int no = p.bool_value(false);
  p.jump_false(no, 0);
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  method.get().set_max_steps(1000);
  CHECK_ERROR(method.get().execute(), NotSupported);
  CHECK_REASON("stopped after 1000 instructions");
}

TEST(jump_condition_must_be_bool) {
  ProgramBuilder p;
  int i = p.int_value(0);
  p.jump_false(i, 0);
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  CHECK_ERROR(method.get().execute(), InvalidProgram);
  CHECK_REASON("condition is a Int, not Bool");
}

TEST(more_than_one_chain_is_refused) {
  ProgramBuilder p = add_program();
  p.set_chains(2);
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
  CHECK_REASON("2 chains; only one is supported");
}

TEST(unknown_method_name_is_refused) {
  Bytes bytes = add_program().finish();
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  CHECK_OK(program);
  CHECK_ERROR(rt::Method::load(program.get(), "backward", g_memory.method_memory()),
              InvalidArgument);
  CHECK_REASON("no method 'backward'");
  CHECK_OK(rt::Method::load(program.get(), "forward", g_memory.method_memory()));
}

TEST(error_names_are_stable) {
  CHECK(strcmp(rt::error_name(rt::Error::Ok), "Ok") == 0);
  CHECK(strcmp(rt::error_name(rt::Error::OperatorMissing), "OperatorMissing") == 0);
  CHECK(strcmp(rt::error_name(rt::Error::NoHardware), "NoHardware") == 0);
  CHECK(strcmp(rt::error_name(static_cast<rt::Error>(200)), "Unknown") == 0);
  CHECK_EQ(static_cast<int>(rt::Error::InvalidInputs), 13);
}

TEST(long_reasons_are_cut_not_overrun) {
  char long_text[600];
  memset(long_text, 'x', sizeof(long_text) - 1);
  long_text[sizeof(long_text) - 1] = '\0';
  rt::fail(rt::Error::Internal, "%s", long_text);
  CHECK(strlen(rt::last_error_reason()) < 300);
  rt::add_context("instruction %d", 7);
  CHECK(strncmp(rt::last_error_reason(), "instruction 7: xxx", 18) == 0);
  CHECK(strlen(rt::last_error_reason()) < 300);
}

TEST(scalar_types) {
  CHECK_EQ(rt::element_size(ScalarType::Float), 4);
  CHECK_EQ(rt::element_size(ScalarType::Short), 2);
  CHECK_EQ(rt::element_size(ScalarType::Long), 8);
  CHECK_EQ(rt::element_size(static_cast<ScalarType>(9)), 0);
  CHECK(strcmp(rt::scalar_type_name(ScalarType::Char), "Char") == 0);
}

TEST(an_unloaded_method_refuses_to_run) {
  rt::Method method;
  CHECK_ERROR(method.execute(), InvalidArgument);
  CHECK_REASON("not loaded");
  CHECK(method.input(0) == nullptr);
}

// ---- Sizes a 32-bit size_t cannot hold: refused alike on the host and the target ----------

TEST(tensor_byte_count_over_31_bits_is_refused) {
  // 2^30 Float elements: 4 GiB, which a 32-bit size_t wraps to 0 bytes.
  struct Case {
    ScalarType dtype;
    std::vector<int32_t> sizes;
  };
  const Case refused[] = {{ScalarType::Float, {1073741824}},
                          {ScalarType::Long, {268435456}},
                          {ScalarType::Half, {32768, 32768}}};
  for (const Case& c : refused) {
    ProgramBuilder p;
    ProgramBuilder::TensorSpec spec;
    spec.dtype = c.dtype;
    spec.sizes = c.sizes;
    p.tensor(spec);
    p.set_buffer_sizes({0, 16});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
    CHECK_REASON("over the 2147483647-byte limit of a tensor");
  }
  // Just under the limit the size is fine; the planned buffer is what is too small.
  ProgramBuilder p;
  p.planned(ScalarType::Float, {536870911}, 0);
  p.set_buffer_sizes({0, 16});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("2147483644 bytes at 0 overrun planned buffer 1");
}

TEST(tensor_element_count_over_31_bits_is_refused) {
  ProgramBuilder p;
  ProgramBuilder::TensorSpec spec;
  spec.dtype = ScalarType::Byte;
  spec.sizes = {65536, 32768};  // 2^31 one-byte elements
  p.tensor(spec);
  p.set_buffer_sizes({0, 16});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
  CHECK_REASON("over 2147483647 elements");
}

TEST(numel_wrap_reproducer_is_refused) {
  // The reviewer's program: two Float [2^30] tensors on a 16-byte planned buffer, sigmoid.
  ProgramBuilder p;
  int a = p.planned(ScalarType::Float, {1073741824}, 0);
  int b = p.planned(ScalarType::Float, {1073741824}, 0);
  p.kernel_call(p.op("test::record", "default"), {a, b, b});
  p.set_outputs({b});
  p.set_buffer_sizes({0, 16});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
  CHECK_REASON("value 0: 1073741824 elements of 4 bytes");
}

TEST(shared_list_tables_cannot_wrap_the_item_count) {
  // One IntList table of 65536 items, referred to by 65537 values: 2^32 + 2^16 items, which
  // a 32-bit count wraps to 65536 (a metadata block far too small, then a stack smash).
  ProgramBuilder p;
  int zero = p.int_value(0);
  int list = p.int_list(std::vector<int64_t>(65536, zero));
  p.alias(list, 65536);
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("list items pass 2147483647 in all");
  // Metadata sizing fails the same way.
  Bytes bytes = p.finish();
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  CHECK_OK(program);
  CHECK_ERROR(rt::Method::metadata_bytes_needed(program.get(), nullptr), InvalidProgram);
}

TEST(shared_tensor_lists_cannot_wrap_the_reference_count) {
  ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {4}, 0);
  int list = p.tensor_list(std::vector<int32_t>(65536, x));
  p.alias(list, 32768);
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("list items pass 2147483647 in all");
}

TEST(shared_argument_vectors_cannot_wrap_the_argument_count) {
  ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {4}, 0);
  p.kernel_call(p.op("test::record", "default"), std::vector<int32_t>(65536, x));
  // 2^32 + 2^16 arguments in all (a 32-bit count wraps to 65536); over the limit long before.
  p.repeat_last_instruction(65536);
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("arguments pass 2147483647 bytes in all");
}

// ---- MoveCall, FreeCall, JumpFalseCall as ExecuTorch runs them ------------------------------

TEST(move_may_not_change_a_value_kind) {
  ProgramBuilder p;
  int out = p.planned(ScalarType::Float, {4}, 0);
  int i = p.int_value(0x4141414141414141);
  p.move(i, out);
  p.set_outputs({out});
  p.set_buffer_sizes({0, 16});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("instruction 0: MoveCall of a Int value into a Tensor value");
}

TEST(move_may_not_change_a_tensor_dtype_or_shape) {
  {
    ProgramBuilder p;
    int from = p.planned(ScalarType::Int, {4}, 0);
    int to = p.planned(ScalarType::Float, {4}, 16);
    p.move(from, to);
    p.set_buffer_sizes({0, 32});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("MoveCall between tensors of another dtype or shape");
  }
  {
    ProgramBuilder p;
    int from = p.planned(ScalarType::Float, {2, 2}, 0);
    int to = p.planned(ScalarType::Float, {4}, 16);
    p.move(from, to);
    p.set_buffer_sizes({0, 32});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
    CHECK_REASON("MoveCall between tensors of another dtype or shape");
  }
}

TEST(move_may_not_change_a_tensor_dim_order) {
  ProgramBuilder p;
  ProgramBuilder::TensorSpec nhwc;
  nhwc.sizes = {1, 2, 2, 3};
  nhwc.dim_order = {0, 2, 3, 1};
  int from = p.tensor(nhwc);
  ProgramBuilder::TensorSpec nchw = nhwc;
  nchw.offset = 64;
  nchw.dim_order = {};
  int to = p.tensor(nchw);
  p.move(from, to);
  p.set_buffer_sizes({0, 128});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("instruction 0: MoveCall between tensors of another dim order");
}

TEST(move_between_tensors_of_one_spec_runs) {
  ProgramBuilder p;
  int from = p.planned(ScalarType::Float, {4}, 0);
  int to = p.planned(ScalarType::Float, {4}, 16);
  p.move(from, to);
  p.set_inputs({from});
  p.set_outputs({to});
  p.set_buffer_sizes({0, 32});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  float input[4] = {1, 2, 3, 4};
  CHECK_OK(method.get().set_input(0, input, sizeof(input)));
  CHECK_OK(method.get().execute());
  CHECK(method.get().output(0)->is_tensor());
  CHECK(memcmp(method.get().output(0)->u.t->data, input, sizeof(input)) == 0);
}

TEST(free_of_a_non_tensor_is_refused) {
  ProgramBuilder p;
  int i = p.int_value(3);
  p.free_value(i);
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("instruction 0: FreeCall of a Int value");
}

namespace {

// Runs `jump_false(cond tensor, 2); fail; ` with the condition given as input 0: true when the
// failing kernel ran (the jump was not taken).
bool falls_through(ScalarType dtype, std::vector<int32_t> sizes, const uint8_t* data,
                   size_t nbytes, rt::Error* err) {
  ProgramBuilder p;
  int cond = p.planned(dtype, std::move(sizes), 0);
  p.jump_false(cond, 2);                             // 0
  p.kernel_call(p.op("test::fail", "default"), {});  // 1: runs when the condition holds
  p.free_value(cond);                                // 2
  p.set_inputs({cond});
  p.set_buffer_sizes({0, 16});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  *err = method.error();
  if (!method.ok() || method.get().set_input(0, data, nbytes) != rt::Error::Ok) {
    return false;
  }
  *err = method.get().execute();
  return *err == rt::Error::KernelFailed;
}

}  // namespace

TEST(jump_false_on_a_bool_tensor_needs_every_element_true) {
  // ExecuTorch's parse_cond_value: true only when all elements are.
  const uint8_t all_true[3] = {1, 1, 1};
  const uint8_t first_true[3] = {1, 0, 1};
  const uint8_t last_false[3] = {1, 1, 0};
  rt::Error err = rt::Error::Ok;
  CHECK(falls_through(ScalarType::Bool, {3}, all_true, 3, &err));
  CHECK(!falls_through(ScalarType::Bool, {3}, first_true, 3, &err));
  CHECK_EQ(static_cast<int>(err), 0);
  CHECK(!falls_through(ScalarType::Bool, {3}, last_false, 3, &err));
  CHECK_EQ(static_cast<int>(err), 0);
  CHECK(falls_through(ScalarType::Bool, {1, 3}, all_true, 3, &err));
  CHECK(falls_through(ScalarType::Bool, {0}, all_true, 0, &err));  // empty: true
}

TEST(jump_false_on_a_non_bool_tensor_is_refused) {
  const uint8_t one[4] = {0, 0, 0x80, 0x3f};
  rt::Error err = rt::Error::Ok;
  rt::clear_error();
  CHECK(!falls_through(ScalarType::Float, {1}, one, 4, &err));
  CHECK_EQ(static_cast<int>(err), static_cast<int>(rt::Error::InvalidProgram));
  CHECK_REASON("instruction 0: condition is Float Tensor, not Bool");
}

// ---- Inputs and outputs ---------------------------------------------------------------------

TEST(set_input_never_writes_into_a_constant) {
  // A MoveCall of a constant into an input's place is legal (same dtype and shape); after
  // it ran, set_input must not copy into the program's bytes.
  float data[4] = {1, 2, 3, 4};
  ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {4}, 0);
  int c = p.constant(ScalarType::Float, {4}, data, sizeof(data));
  p.move(c, x);
  p.set_inputs({x});
  p.set_outputs({x});
  p.set_buffer_sizes({0, 16});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  float input[4] = {5, 6, 7, 8};
  CHECK_OK(method.get().set_input(0, input, sizeof(input)));
  CHECK_OK(method.get().execute());
  CHECK_ERROR(method.get().set_input(0, input, sizeof(input)), NotSupported);
  CHECK_REASON("input 0 is constant data");
  CHECK(memcmp(method.get().output(0)->u.t->data, data, sizeof(data)) == 0);
}

TEST(constant_inputs_and_outputs_are_refused) {
  float data[4] = {1, 1, 1, 1};
  {
    // The reviewer's const_input.pte: a legacy constant_buffer tensor as the method's input,
    // which set_input would overwrite in the program's own bytes.
    ProgramBuilder p;
    int c = p.constant(ScalarType::Float, {4}, data, sizeof(data));
    p.set_inputs({c});
    p.set_outputs({c});
    p.set_buffer_sizes({0});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
    CHECK_REASON("input 0 (value 0) is not memory-planned");
  }
  {
    ProgramBuilder p;
    int x = p.planned(ScalarType::Float, {4}, 0);
    int c = p.constant(ScalarType::Float, {4}, data, sizeof(data));
    p.set_inputs({x});
    p.set_outputs({x, c});
    p.set_buffer_sizes({0, 16});
    CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), NotSupported);
    CHECK_REASON("output 1 (value 1) is not memory-planned");
  }
}

// ---- Reasons ----------------------------------------------------------------------------------

TEST(operator_without_overload_has_no_trailing_dot) {
  ProgramBuilder p;
  p.kernel_call(p.op("test::fail", ""), {});
  Bytes bytes = p.finish();
  rt::Result<rt::Method> method = load_method(bytes, g_memory.method_memory());
  CHECK_OK(method);
  CHECK_ERROR(method.get().execute(), KernelFailed);
  CHECK_REASON("instruction 0 (test::fail): placeholder failure");
}

TEST(sixty_four_bit_values_print_whole) {
  // On the target `long` is 32 bits: "%ld" printed 2^40 as 0.
  ProgramBuilder p;
  p.int_list({int64_t{1} << 40});
  CHECK_ERROR(load_method(p.finish(), g_memory.method_memory()), InvalidProgram);
  CHECK_REASON("list item: value 1099511627776 out of range (1)");
  CHECK(strcmp(rt::int_text(INT64_MIN).text, "-9223372036854775808") == 0);
  CHECK(strcmp(rt::uint_text(UINT64_MAX).text, "18446744073709551615") == 0);
  CHECK(strcmp(rt::uint_text(0).text, "0") == 0);
}
