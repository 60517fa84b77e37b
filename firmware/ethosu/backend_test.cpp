// The EthosUBackend through the runtime, on the register MODEL (not hardware): a real delegated
// export from the pytest fixture (--programs DIR), a float-described delegate output refused at
// load, and every boundary and payload refusal on programs built here.
#include "backend.h"

#include <string.h>

#include <vector>

#include "npu_register_model.h"
#include "rt/method.h"
#include "rt/program.h"
#include "schema.h"
#include "sha256.h"
#include "test_harness.h"
#include "test_support.h"
#include "vela_payload_builder.h"

using rt::ScalarType;
using test::Bytes;
using test::NpuRegisterModel;
using test::ProgramBuilder;
using test::VelaBuilder;

namespace {

alignas(16) uint8_t g_metadata[1 << 16];
alignas(16) uint8_t g_planned[1 << 16];
alignas(16) uint8_t g_scratch[1 << 12];

struct Rig {
  NpuRegisterModel model;
  rt::Span arena = {g_planned, sizeof(g_planned)};
  rt::Result<rt::Program> program = rt::Error::Internal;
  Rig() {
    rt::clear_backends();
    ethosu::reset_cycles();
  }
  // Registered here, after the test set up the model.
  rt::Error register_backend() {
    RT_TRY(ethosu::register_backend(model.platform()));
    model.attach(ethosu::backend_driver_for_tests());
    return rt::Error::Ok;
  }
  rt::Result<rt::Method> load(const Bytes& bytes, size_t scratch_size = sizeof(g_scratch)) {
    program = rt::Program::load(bytes.data(), bytes.size());
    if (!program.ok()) return program.error();
    rt::MethodMemory memory = {{g_metadata, sizeof(g_metadata)}, &arena, 1,
                               {g_scratch, scratch_size}};
    return rt::Method::load(program.get(), nullptr, memory);
  }
  ~Rig() {
    rt::clear_backends();
    ethosu::unregister_platform();
  }
};

std::vector<uint8_t> spec(const char* text) {
  return std::vector<uint8_t>(text, text + strlen(text));
}

// in (Char [16]) -> delegate -> out (Char [16]) with `payload`.
Bytes delegate_program(const std::vector<uint8_t>& payload,
                       ScalarType in_type = ScalarType::Char, std::vector<int32_t> in_shape = {16},
                       ScalarType out_type = ScalarType::Char,
                       std::vector<int32_t> out_shape = {16}) {
  ProgramBuilder p;
  int x = p.planned(in_type, in_shape, 0);
  int y = p.planned(out_type, out_shape, 128);
  p.delegate_call(p.delegate("EthosUBackend", payload, {{"output_format", spec("vela")}}),
                  {x, y});
  p.set_inputs({x});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 256});
  return p.finish();
}

// The NPU's stand-in work: output = input ^ 0x5A, at the standard payload's offsets.
void xor_standard(NpuRegisterModel& m) {
  auto* scratch = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(m.basep(1)));
  for (int i = 0; i < 16; ++i) scratch[16 + i] = static_cast<uint8_t>(scratch[i] ^ 0x5A);
}

// The Vela payload inside a .pte (found by its first block), as the parser sees it.
bool find_payload(const Bytes& pte, ethosu::VelaPayload* view) {
  for (size_t i = 0; i + 16 <= pte.size(); i += 16) {
    if (memcmp(pte.data() + i, "vela_bin_stream", 16) != 0) continue;
    const uint8_t* at = pte.data() + i;
    size_t left = pte.size() - i;
    size_t pos = 0;
    while (pos + 32 <= left && memcmp(at + pos, "vela_end_stream", 16) != 0) {
      uint32_t size;
      memcpy(&size, at + pos + 16, 4);
      pos += 32 + ((size + 15) & ~15u);
    }
    return pos + 32 <= left && ethosu::parse_vela_payload(at, pos + 32, view) == rt::Error::Ok;
  }
  return false;
}

ethosu::VelaPayload g_real_view;

void xor_real(NpuRegisterModel& m) {
  auto* scratch = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(m.basep(1)));
  ethosu::IoRecord in = ethosu::io_record(g_real_view.inputs, 0);
  ethosu::IoRecord out = ethosu::io_record(g_real_view.outputs, 0);
  uint8_t tmp[256];
  memcpy(tmp, scratch + in.offset, in.nbytes);  // the output may alias the input
  for (uint32_t i = 0; i < out.nbytes; ++i) scratch[out.offset + i] = tmp[i] ^ 0x5A;
}

}  // namespace

TEST(backend_runs_a_real_delegated_export_on_the_model) {
  Bytes pte = test::fixture_program("delegate.pte");
  if (pte.size() == 0) {
    printf("  (no --programs: skipped)\n");
    return;
  }
  CHECK(find_payload(pte, &g_real_view));
  Rig rig;
  rig.model.on_run = xor_real;
  CHECK_OK(rig.register_backend());
  rt::Result<rt::Method> method = rig.load(pte);
  CHECK_OK(method);
  rt::Method& m = method.get();
  const rt::Tensor& in = *m.input(0)->u.t;
  CHECK(in.dtype == ScalarType::Char);
  std::vector<int8_t> input(in.nbytes);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int8_t>(i * 7 - 50);
  CHECK_OK(m.set_input(0, input.data(), input.size()));
  CHECK_OK(m.execute());
  const rt::Tensor& out = *m.output(0)->u.t;
  CHECK_EQ(out.nbytes, input.size());
  for (size_t i = 0; i < input.size(); ++i) {
    CHECK_EQ(out.data_as<uint8_t>()[i], static_cast<uint8_t>(input[i]) ^ 0x5A);
  }
  CHECK_EQ(rig.model.runs, 1);
  // The registers saw the payload's own command stream, the scratch as region 1.
  CHECK_EQ(rig.model.reg(ethosu::reg::QSIZE), g_real_view.command_stream_size);
  CHECK_EQ(rig.model.basep(1), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(g_scratch)));
  CHECK_EQ(ethosu::npu_cycles(), rig.model.cycles);
  CHECK_OK(m.execute());
  CHECK_EQ(ethosu::npu_cycles(), 2 * rig.model.cycles);
}

TEST(backend_refuses_a_float_described_delegate_output_at_load) {
  Bytes original = test::fixture_program("delegate.pte");
  if (original.size() == 0) {
    printf("  (no --programs: skipped)\n");
    return;
  }
  // The stock ExecuTorch 1.5.1 bug in miniature: the delegate's output tensor says Float over
  // the NPU's int8 output. Patched in a copy; the planned buffer grows so that only the
  // boundary check can refuse it.
  Bytes pte = original.copy();
  const auto* program = executorch_flatbuffer::GetProgram(pte.data());
  const auto* plan = program->execution_plan()->Get(0);
  const auto* call = plan->chains()->Get(0)->instructions()->Get(0)->instr_args_as_DelegateCall();
  CHECK(call != nullptr);
  int32_t out_value = call->args()->Get(call->args()->size() - 1);
  const auto* tensor = plan->values()->Get(static_cast<uint32_t>(out_value))->val_as_Tensor();
  CHECK(tensor != nullptr && tensor->scalar_type() == executorch_flatbuffer::ScalarType::CHAR);
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(tensor);
  auto* dtype = const_cast<uint8_t*>(table->GetAddressOf(executorch_flatbuffer::Tensor::VT_SCALAR_TYPE));
  CHECK(dtype != nullptr);
  *dtype = static_cast<uint8_t>(ScalarType::Float);
  auto* sizes = const_cast<int64_t*>(plan->non_const_buffer_sizes()->data());
  for (uint32_t i = 1; i < plan->non_const_buffer_sizes()->size(); ++i) sizes[i] *= 8;

  Rig rig;
  CHECK_OK(rig.register_backend());
  char expected[160];
  snprintf(expected, sizeof(expected),
           "delegate 0 (EthosUBackend) at instruction 0: output 0 (value %d): program says Float",
           static_cast<int>(out_value));
  CHECK_ERROR(rig.load(pte), DtypeMismatch);
  CHECK_REASON(expected);
  CHECK_REASON("but the NPU moves Char (1-byte elements, 16 bytes)");
  CHECK_EQ(rig.model.runs, 0);
}

TEST(backend_refuses_a_program_on_a_board_without_the_npu) {
  Rig rig;
  rig.model.present = false;
  CHECK_OK(rig.register_backend());
  CHECK_ERROR(rig.load(delegate_program(VelaBuilder::standard().bytes())), NoHardware);
  CHECK_REASON("delegate 0 (EthosUBackend) init: no Ethos-U55 at 0x58102000 on this board");
}

TEST(backend_refuses_a_stream_for_another_npu_config) {
  Rig rig;
  rig.model.config = 0x1808;
  CHECK_OK(rig.register_backend());
  CHECK_ERROR(rig.load(delegate_program(VelaBuilder::standard().bytes())), NotSupported);
  CHECK_REASON("for 128 MACs per cycle (CONFIG 0x00001807), the NPU has 256");
}

TEST(backend_runs_a_built_program_and_checks_the_layout) {
  Rig rig;
  rig.model.on_run = xor_standard;
  CHECK_OK(rig.register_backend());
  Bytes bytes = delegate_program(VelaBuilder::standard().bytes());  // outlives the method
  rt::Result<rt::Method> method = rig.load(bytes);
  CHECK_OK(method);
  int8_t input[16];
  for (int i = 0; i < 16; ++i) input[i] = static_cast<int8_t>(3 * i - 20);
  CHECK_OK(method.get().set_input(0, input, sizeof(input)));
  CHECK_OK(method.get().execute());
  const uint8_t* out = method.get().output(0)->u.t->data_as<uint8_t>();
  for (int i = 0; i < 16; ++i) CHECK_EQ(out[i], static_cast<uint8_t>(input[i]) ^ 0x5A);
  CHECK_EQ(rig.model.reg(ethosu::reg::QSIZE), 12);
}

// A delegate whose data is all constant (an arange, an attention mask) has no inputs: Vela's
// inputs block has a count of 0, and the call passes the outputs alone.
TEST(backend_runs_a_delegate_without_inputs) {
  Rig rig;
  rig.model.on_run = [](NpuRegisterModel& m) {
    auto* scratch = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(m.basep(1)));
    for (int i = 0; i < 16; ++i) scratch[16 + i] = static_cast<uint8_t>(7 * i + 1);
  };
  CHECK_OK(rig.register_backend());
  VelaBuilder b = VelaBuilder::standard();
  b.find("inputs")->data = VelaBuilder::records({});
  ProgramBuilder p;
  int y = p.planned(ScalarType::Char, {16}, 128);
  p.delegate_call(p.delegate("EthosUBackend", b.bytes(), {{"output_format", spec("vela")}}), {y});
  p.set_inputs({});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 256});
  Bytes bytes = p.finish();  // outlives the method
  rt::Result<rt::Method> method = rig.load(bytes);
  CHECK_OK(method);
  CHECK_OK(method.get().execute());
  const uint8_t* out = method.get().output(0)->u.t->data_as<uint8_t>();
  for (int i = 0; i < 16; ++i) CHECK_EQ(out[i], static_cast<uint8_t>(7 * i + 1));

  // The call must still match the records: an input passed to it is refused at load.
  ProgramBuilder q;
  int x = q.planned(ScalarType::Char, {16}, 0);
  y = q.planned(ScalarType::Char, {16}, 128);
  q.delegate_call(q.delegate("EthosUBackend", b.bytes(), {{"output_format", spec("vela")}}),
                  {x, y});
  q.set_inputs({x});
  q.set_outputs({y});
  q.set_buffer_sizes({0, 256});
  CHECK_ERROR(rig.load(q.finish()), InvalidProgram);
  CHECK_REASON("the call passes 2 values but the NPU has 0 inputs + 1 outputs");
}

TEST(backend_payload_errors_name_the_delegate_and_the_block) {
  Rig rig;
  CHECK_OK(rig.register_backend());
  VelaBuilder b = VelaBuilder::standard();
  b.find("inputs")->data = VelaBuilder::records({{{16}, 3, 0}});
  CHECK_ERROR(rig.load(delegate_program(b.bytes())), InvalidProgram);
  CHECK_REASON("delegate 0 (EthosUBackend) init: Vela payload: block 'inputs' at offset");
  CHECK_REASON("element size 3");

  b = VelaBuilder::standard();
  b.find("weight_data")->external = 1;
  CHECK_ERROR(rig.load(delegate_program(b.bytes())), NotSupported);
  CHECK_REASON("external data");

  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int y = p.planned(ScalarType::Char, {16}, 16);
  p.delegate_call(p.delegate("EthosUBackend", VelaBuilder::standard().bytes(),
                             {{"output_format", spec("tosa")}}),
                  {x, y});
  p.set_buffer_sizes({0, 64});
  CHECK_ERROR(rig.load(p.finish()), NotSupported);
  CHECK_REASON("output_format is not 'vela'");
}

TEST(backend_boundary_checks_say_what_the_host_audit_says) {
  Rig rig;
  CHECK_OK(rig.register_backend());
  std::vector<uint8_t> payload = VelaBuilder::standard().bytes();
  CHECK_ERROR(rig.load(delegate_program(payload, ScalarType::Float, {4})), DtypeMismatch);
  CHECK_REASON(
      "delegate 0 (EthosUBackend) at instruction 0: input 0 (value 0): program says Float [4] "
      "(16 bytes) but the NPU moves Char (1-byte elements, 16 bytes)");
  CHECK_ERROR(rig.load(delegate_program(payload, ScalarType::Char, {16}, ScalarType::Short, {8})),
              DtypeMismatch);
  CHECK_REASON("output 0 (value 1): program says Short [8] (16 bytes) but the NPU moves Char");
  CHECK_ERROR(rig.load(delegate_program(payload, ScalarType::Char, {2, 16})), ShapeMismatch);
  CHECK_REASON(
      "input 0 (value 0): program says 32 bytes (Char [2, 16]) but the NPU record is 16 bytes "
      "(shape [1, 1, 1, 1, 1, 16])");
  // The same bytes in another shape are no difference (Vela reshapes), nor leading 1s.
  CHECK_OK(rig.load(delegate_program(payload, ScalarType::Char, {16}, ScalarType::Char, {4, 4})));
  CHECK_OK(rig.load(delegate_program(payload, ScalarType::Byte, {1, 1, 16})));
  // A bool (the U85's comparisons) moves as its bytes, as in ExecuTorch's EthosUBackend.
  CHECK_OK(rig.load(delegate_program(payload, ScalarType::Char, {16}, ScalarType::Bool, {16})));
  CHECK_OK(rig.load(delegate_program(payload, ScalarType::Bool, {16})));
}

TEST(backend_call_sites_must_match_the_records) {
  Rig rig;
  CHECK_OK(rig.register_backend());
  std::vector<uint8_t> payload = VelaBuilder::standard().bytes();
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int n = p.int_value(3);
  int d = p.delegate("EthosUBackend", payload, {});
  p.delegate_call(d, {x, x});
  p.delegate_call(d, {x});
  p.set_buffer_sizes({0, 64});
  CHECK_ERROR(rig.load(p.finish()), InvalidProgram);
  CHECK_REASON(
      "delegate 0 (EthosUBackend) at instruction 1: the call passes 1 values but the NPU has 1 "
      "inputs + 1 outputs");
  ProgramBuilder q;
  x = q.planned(ScalarType::Char, {16}, 0);
  n = q.int_value(3);
  q.delegate_call(q.delegate("EthosUBackend", payload, {}), {x, n});
  q.set_buffer_sizes({0, 64});
  CHECK_ERROR(rig.load(q.finish()), InvalidProgram);
  CHECK_REASON("output 0 (value 1) is not a tensor");
}

TEST(backend_needs_the_npu_scratch_in_the_method) {
  Rig rig;
  CHECK_OK(rig.register_backend());
  CHECK_ERROR(rig.load(delegate_program(VelaBuilder::standard().bytes()), 16), OutOfMemory);
  CHECK_REASON("the NPU needs 32 bytes of scratch, the method has 16");
}

TEST(backend_npu_failures_at_execute_name_the_instruction) {
  Rig rig;
  rig.model.fault_bits = ethosu::status::kCmdParseError;
  CHECK_OK(rig.register_backend());
  Bytes bytes = delegate_program(VelaBuilder::standard().bytes());
  rt::Result<rt::Method> method = rig.load(bytes);
  CHECK_OK(method);
  CHECK_ERROR(method.get().execute(), DelegateFailed);
  CHECK_REASON("instruction 0 (delegate 0, EthosUBackend): Ethos-U55 fault: cmd_parse_error");
  rig.model.fault_bits = 0;
  rig.model.never_interrupts = true;
  CHECK_ERROR(method.get().execute(), DelegateFailed);
  CHECK_REASON("did not finish within");
}

TEST(backend_without_an_npu_refuses_the_program_at_load) {
  // QEMU's placeholder reads 0; a board's link mode runs the driver on the virtual U55 instead
  // (firmware/link/server_test.cpp), so the backend itself never guesses.
  Rig rig;
  rig.model.present = false;
  CHECK_OK(rig.register_backend());
  CHECK_ERROR(rig.load(delegate_program(VelaBuilder::standard().bytes())), NoHardware);
  CHECK_REASON("no Ethos-U55 at 0x58102000 on this board");
}

TEST(backend_load_checks_the_boundary_of_real_and_patched_exports) {
  Rig rig;
  CHECK_OK(rig.register_backend());
  std::vector<uint8_t> payload = VelaBuilder::standard().bytes();
  CHECK_ERROR(rig.load(delegate_program(payload, ScalarType::Char, {16}, ScalarType::Float, {4})),
              DtypeMismatch);
  CHECK_REASON("output 0 (value 1): program says Float [4] (16 bytes) but the NPU moves Char");
  CHECK_ERROR(rig.load(delegate_program(VelaBuilder::standard().bytes()), 16), OutOfMemory);
  Bytes original = test::fixture_program("delegate.pte");
  if (original.size() == 0) {
    printf("  (no --programs: the real export part skipped)\n");
    return;
  }
  // The real export loads, and its float-patched copy is refused.
  CHECK_OK(rig.load(original));
  Bytes pte = original.copy();
  const auto* program = executorch_flatbuffer::GetProgram(pte.data());
  const auto* plan = program->execution_plan()->Get(0);
  const auto* call = plan->chains()->Get(0)->instructions()->Get(0)->instr_args_as_DelegateCall();
  CHECK(call != nullptr);
  int32_t out_value = call->args()->Get(call->args()->size() - 1);
  const auto* tensor = plan->values()->Get(static_cast<uint32_t>(out_value))->val_as_Tensor();
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(tensor);
  auto* dtype = const_cast<uint8_t*>(table->GetAddressOf(executorch_flatbuffer::Tensor::VT_SCALAR_TYPE));
  CHECK(dtype != nullptr);
  *dtype = static_cast<uint8_t>(ScalarType::Float);
  auto* sizes = const_cast<int64_t*>(plan->non_const_buffer_sizes()->data());
  for (uint32_t i = 1; i < plan->non_const_buffer_sizes()->size(); ++i) sizes[i] *= 8;
  CHECK_ERROR(rig.load(pte), DtypeMismatch);
  CHECK_REASON("program says Float");
  CHECK_EQ(rig.model.runs, 0);
}

TEST(backend_registration_checks_the_platform) {
  rt::clear_backends();
  ethosu::NpuPlatform p = ethosu::default_platform(0x58102000);
  CHECK_ERROR(ethosu::register_backend(p), InvalidArgument);
  NpuRegisterModel model;
  CHECK_OK(ethosu::register_backend(model.platform()));
  CHECK_OK(ethosu::register_backend(model.platform()));  // again: the platform is replaced
  CHECK_EQ(rt::num_backends(), 1);
  rt::clear_backends();
  ethosu::unregister_platform();
}

namespace {

// Two documented configurations of two adapters, at the Corstone-300's offsets.
const uint32_t kTaRegisterOffsets[ethosu::kTimingAdapterRegisters] = {0x00, 0x04, 0x08, 0x0C, 0x10,
                                                                      0x14, 0x18, 0x1C, 0x28};
const ethosu::TimingAdapterConfig kTaConfigs[] = {
    {"Board_Shared", "Board_Shared",
     {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {11, 12, 13, 14, 15, 16, 17, 18, 19}}},
    {"Stock_System", "Sram_Only",
     {{21, 22, 23, 24, 25, 26, 27, 28, 29}, {31, 32, 33, 34, 35, 36, 37, 38, 39}}},
};

// in -> delegate compiled with `flags` -> out.
Bytes flagged_program(const char* flags) {
  ProgramBuilder p;
  int x = p.planned(ScalarType::Char, {16}, 0);
  int y = p.planned(ScalarType::Char, {16}, 128);
  p.delegate_call(p.delegate("EthosUBackend", VelaBuilder::standard().bytes(),
                             {{"output_format", spec("vela")}, {"compile_flags", spec(flags)}}),
                  {x, y});
  p.set_inputs({x});
  p.set_outputs({y});
  p.set_buffer_sizes({0, 256});
  return p.finish();
}

rt::Error register_with_adapters(Rig& rig) {
  ethosu::NpuPlatform platform = rig.model.platform();
  platform.timing_adapters = {2, {0x1000, 0x1200}, kTaRegisterOffsets, kTaConfigs, 2};
  RT_TRY(ethosu::register_backend(platform));
  rig.model.attach(ethosu::backend_driver_for_tests());
  return rt::Error::Ok;
}

// The value last written at `offset` (0xDEADBEEF: never written).
uint32_t written(const NpuRegisterModel& m, uint32_t offset) {
  uint32_t value = 0xDEADBEEFu;
  for (const auto& a : m.log) {
    if (a.write && a.offset == offset) value = a.value;
  }
  return value;
}

// One run of a flagged_program's method on a zero input.
rt::Error run_zeros(rt::Method& method) {
  int8_t input[16] = {};
  RT_TRY(method.set_input(0, input, sizeof(input)));
  return method.execute();
}

size_t adapter_writes(const NpuRegisterModel& m) {
  size_t n = 0;
  for (const auto& a : m.log) n += a.write && a.offset >= 0x1000 && a.offset < 0x1240;
  return n;
}

}  // namespace

TEST(backend_programs_the_timing_adapters_for_the_compiled_configuration) {
  Rig rig;
  rig.model.on_run = xor_standard;
  CHECK_OK(register_with_adapters(rig));
  Bytes bytes = flagged_program(
      "--accelerator-config=ethos-u55-128 --system-config=Stock_System --memory-mode=Sram_Only");
  rt::Result<rt::Method> method = rig.load(bytes);
  CHECK_OK(method);
  CHECK_EQ(adapter_writes(rig.model), 0u);  // at the job, not at load
  CHECK_OK(run_zeros(method.get()));
  // (The log, not reg(): the model is the NPU alone, and its soft reset clears its array.)
  for (uint32_t r = 0; r < ethosu::kTimingAdapterRegisters; ++r) {
    CHECK_EQ(written(rig.model, 0x1000 + kTaRegisterOffsets[r]), kTaConfigs[1].values[0][r]);
    CHECK_EQ(written(rig.model, 0x1200 + kTaRegisterOffsets[r]), kTaConfigs[1].values[1][r]);
  }
  // Written before the job started (the driver's CMD write that runs it comes after).
  long first_adapter = rig.model.find_write(0x1000);
  long run = rig.model.find_write(ethosu::reg::CMD, static_cast<size_t>(first_adapter));
  CHECK(first_adapter >= 0 && run > first_adapter);
  CHECK_EQ(adapter_writes(rig.model), 2u * ethosu::kTimingAdapterRegisters);
  CHECK_OK(method.get().execute());  // the setting in force is not written again
  CHECK_EQ(adapter_writes(rig.model), 2u * ethosu::kTimingAdapterRegisters);
}

TEST(backend_refuses_a_configuration_the_board_does_not_document) {
  Rig rig;
  CHECK_OK(register_with_adapters(rig));
  // The board documents Board_Shared + Board_Shared, not Board_Shared + Sram_Only.
  CHECK_ERROR(rig.load(flagged_program("--system-config=Board_Shared --memory-mode=Sram_Only")),
              NotSupported);
  CHECK_REASON("compiled for Vela system config Board_Shared, memory mode Sram_Only");
}

TEST(backend_leaves_the_adapters_alone_without_a_named_configuration) {
  for (const char* flags : {"--accelerator-config=ethos-u55-128", "--memory-mode=Board_Shared"}) {
    Rig rig;
    rig.model.on_run = xor_standard;
    CHECK_OK(register_with_adapters(rig));
    Bytes bytes = flagged_program(flags);
    rt::Result<rt::Method> method = rig.load(bytes);
    CHECK_OK(method);
    CHECK_OK(run_zeros(method.get()));
    CHECK_EQ(adapter_writes(rig.model), 0u);
  }
}

TEST(backend_reads_the_configuration_as_vela_takes_its_flags) {
  // `--name value` as well as `--name=value`, and the last of each wins.
  Rig rig;
  rig.model.on_run = xor_standard;
  CHECK_OK(register_with_adapters(rig));
  Bytes bytes = flagged_program(
      "--system-config=Board_Shared --memory-mode Sram_Only --system-config Stock_System");
  rt::Result<rt::Method> method = rig.load(bytes);
  CHECK_OK(method);
  CHECK_OK(run_zeros(method.get()));
  CHECK_EQ(written(rig.model, 0x1000 + kTaRegisterOffsets[7]), kTaConfigs[1].values[0][7]);
}
