// The Ethos-U backend (see backend.h). Messages say what the host's boundary audit
// (sdk/program/audit.py) says about the same program.
#include "backend.h"

#include <stdio.h>
#include <string.h>

#include "rt/scalar_type.h"

namespace ethosu {
namespace {

using rt::Error;
using rt::ul;

Driver g_driver;
NpuPlatform g_platform = {};  // what register_backend was given: the timing adapters' writes
bool g_have_platform = false;
int32_t g_timing_config = kNoTimingConfig;  // the adapters' setting now (none written yet)
uint64_t g_cycles = 0;

constexpr size_t kScratchAlign = 16;

struct ShapeText {
  char text[96];
};

// "[1, 16]", as the host prints a shape.
ShapeText shape_text(const int32_t* sizes, size_t dim) {
  ShapeText t;
  size_t used = 0;
  t.text[0] = '\0';
  for (size_t d = 0; d <= dim && used < sizeof(t.text); ++d) {
    int n = d == dim ? snprintf(t.text + used, sizeof(t.text) - used, "]")
                     : snprintf(t.text + used, sizeof(t.text) - used, "%s%ld", d == 0 ? "[" : ", ",
                                static_cast<long>(sizes[d]));
    used += n > 0 ? static_cast<size_t>(n) : 0;
  }
  if (dim == 0) {
    snprintf(t.text, sizeof(t.text), "[]");
  }
  return t;
}

// What the NPU moves at a delegate's boundary: integers, and booleans as bytes (the U85's
// comparisons: regor ends a bool that leaves the NPU with an AND 1, so its bytes are 0 or 1, as
// ExecuTorch's). ExecuTorch's EthosUBackend takes Bool inputs and outputs of 1-byte records and
// copies their bytes as they are; so does this backend (the host's audit says the same).
bool npu_moves(rt::ScalarType t) {
  switch (t) {
    case rt::ScalarType::Byte:
    case rt::ScalarType::Char:
    case rt::ScalarType::Short:
    case rt::ScalarType::Int:
    case rt::ScalarType::UInt16:
    case rt::ScalarType::UInt32:
    case rt::ScalarType::Bool:
      return true;
    default:
      return false;
  }
}

Error check_boundary(const char* direction, uint32_t position, long value, const rt::Tensor& t,
                     const IoRecord& r) {
  ShapeText program_shape = shape_text(t.sizes, t.dim);
  RT_CHECK(npu_moves(t.dtype) && rt::element_size(t.dtype) == r.elem_size, Error::DtypeMismatch,
           "%s %lu (value %ld): program says %s %s (%lu bytes) but the NPU moves %s (%lu-byte "
           "elements, %lu bytes)",
           direction, ul(position), value, rt::scalar_type_name(t.dtype), program_shape.text,
           ul(t.nbytes), elem_size_dtype(r.elem_size), ul(r.elem_size), ul(r.nbytes));
  ShapeText npu_shape = shape_text(r.shape, kShapeDims);
  RT_CHECK(t.nbytes == r.nbytes, Error::ShapeMismatch,
           "%s %lu (value %ld): program says %lu bytes (%s %s) but the NPU record is %lu bytes "
           "(shape %s)",
           direction, ul(position), value, ul(t.nbytes), rt::scalar_type_name(t.dtype),
           program_shape.text, ul(r.nbytes), npu_shape.text);
  // The same elements of the same size: the record may view them in another shape (Vela
  // reshapes, e.g. [1, 2, 16, 16] as [32, 4, 4]); the bytes are copied as they are, as
  // ExecuTorch's runtime and the host reference do.
  return Error::Ok;
}

bool spec_is(const rt::CompileSpec& spec, const char* key) {
  return spec.key_size == strlen(key) && memcmp(spec.key, key, spec.key_size) == 0;
}

// The adapters get the setting of the configuration the delegate was compiled for, when it
// differs from the one in force (every delegate of a program is usually compiled alike).
void program_timing_adapters(int32_t config) {
  const TimingAdapters& ta = g_platform.timing_adapters;
  if (config < 0 || static_cast<uint32_t>(config) >= ta.config_count ||
      config == g_timing_config) {
    return;  // none named, or not this platform's table (init checked it against the one then)
  }
  const TimingAdapterConfig& c = ta.configs[config];
  for (uint32_t a = 0; a < ta.count && a < kMaxTimingAdapters; ++a) {
    for (uint32_t r = 0; r < kTimingAdapterRegisters; ++r) {
      g_platform.write32(g_platform.ctx, ta.offsets[a] + ta.register_offsets[r], c.values[a][r]);
    }
  }
  g_timing_config = config;
}

Error init(const rt::BackendInitContext& ctx) {
  RT_CHECK(ctx.state_size >= sizeof(BackendState), Error::Internal, "EthosUBackend: no state");
  RT_CHECK(g_have_platform, Error::Internal, "EthosUBackend: registered without a platform");
  auto* state = static_cast<BackendState*>(ctx.state);
  state->timing_config = kNoTimingConfig;
  for (size_t i = 0; i < ctx.num_specs; ++i) {
    const rt::CompileSpec& spec = ctx.specs[i];
    if (spec_is(spec, "output_format")) {
      RT_CHECK(spec.value_size == 4 && memcmp(spec.value, "vela", 4) == 0, Error::NotSupported,
               "compile spec output_format is not 'vela': this backend runs Vela streams only");
    }
    if (spec_is(spec, "compile_flags")) {
      RT_TRY(find_timing_config(g_platform.timing_adapters, spec.value, spec.value_size,
                                &state->timing_config));
    }
  }
  RT_CHECK(reinterpret_cast<uintptr_t>(ctx.payload) % 16 == 0, Error::InvalidProgram,
           "the payload is not 16-byte aligned in the program (the NPU reads its command "
           "stream and weights in place)");
  RT_TRY(parse_vela_payload(ctx.payload, ctx.payload_size, &state->payload));
  state->delegate_index = static_cast<uint32_t>(ctx.delegate_index);
  // The command stream and the weights are the program's constants: written back once here,
  // not before every job (the CPU never writes them again).
  const VelaPayload& v = state->payload;
  if (g_platform.clean_dcache != nullptr) {
    g_platform.clean_dcache(g_platform.ctx, v.command_stream, v.command_stream_size);
    if (v.weights_size > 0) {
      g_platform.clean_dcache(g_platform.ctx, v.weights, v.weights_size);
    }
  }
  state->constants_clean = true;
  return g_driver.check_config(state->payload.npu_config, state->payload.npu_id);
}

Error prepare(const rt::BackendPrepareContext& ctx) {
  const auto* state = static_cast<const BackendState*>(ctx.state);
  const VelaPayload& v = state->payload;
  size_t records = static_cast<size_t>(v.inputs.count) + v.outputs.count;
  RT_CHECK(ctx.nargs == records, Error::InvalidProgram,
           "the call passes %lu values but the NPU has %lu inputs + %lu outputs", ul(ctx.nargs),
           ul(v.inputs.count), ul(v.outputs.count));
  for (size_t k = 0; k < ctx.nargs; ++k) {
    bool input = k < v.inputs.count;
    const char* direction = input ? "input" : "output";
    uint32_t position = static_cast<uint32_t>(input ? k : k - v.inputs.count);
    long value = static_cast<long>(ctx.args[k] - ctx.values);
    RT_CHECK(ctx.args[k]->is_tensor(), Error::InvalidProgram, "%s %lu (value %ld) is not a tensor",
             direction, ul(position), value);
    IoRecord r = io_record(input ? v.inputs : v.outputs, position);
    RT_TRY(check_boundary(direction, position, value, *ctx.args[k]->u.t, r));
  }
  RT_CHECK(ctx.scratch_size >= v.scratch_size, Error::OutOfMemory,
           "the NPU needs %lu bytes of scratch, the method has %lu", ul(v.scratch_size),
           ul(ctx.scratch_size));
  RT_CHECK(reinterpret_cast<uintptr_t>(ctx.scratch) % kScratchAlign == 0, Error::InvalidArgument,
           "the method's scratch is not 16-byte aligned (the NPU's region 1)");
  return Error::Ok;
}

Error execute(void* raw_state, rt::KernelContext& ctx, rt::Value* const* args, size_t nargs) {
  auto* state = static_cast<BackendState*>(raw_state);
  const VelaPayload& v = state->payload;
  // prepare() checked the arguments and the scratch of this method; execute trusts them, but
  // a caller that swapped the scratch since is refused, not overrun.
  RT_CHECK(nargs == static_cast<size_t>(v.inputs.count) + v.outputs.count, Error::Internal,
           "EthosUBackend: %lu arguments, prepared for %lu", ul(nargs),
           ul(static_cast<size_t>(v.inputs.count) + v.outputs.count));
  RT_CHECK(ctx.scratch != nullptr && ctx.scratch_size >= v.scratch_size &&
               reinterpret_cast<uintptr_t>(ctx.scratch) % kScratchAlign == 0,
           Error::OutOfMemory, "the NPU needs %lu bytes of 16-byte aligned scratch, it has %lu",
           ul(v.scratch_size), ul(ctx.scratch_size));
  for (uint32_t i = 0; i < v.inputs.count; ++i) {
    IoRecord r = io_record(v.inputs, i);
    if (r.nbytes > 0) memcpy(ctx.scratch + r.offset, args[i]->u.t->data, r.nbytes);
  }
  program_timing_adapters(state->timing_config);
  Job job = {};
  job.command_stream = v.command_stream;
  job.command_stream_size = v.command_stream_size;
  job.regions[0] = const_cast<uint8_t*>(v.weights);  // read-only for the NPU
  job.region_sizes[0] = v.weights_size;
  job.regions[1] = ctx.scratch;
  job.region_sizes[1] = v.scratch_size;
  job.regions[2] = ctx.scratch;  // fast scratch: no dedicated SRAM cache here
  job.region_sizes[2] = v.scratch_size;
  job.num_regions = 3;
  job.constant_regions = 1u << 0;
  job.constants_clean = state->constants_clean;
  RT_TRY(g_driver.invoke(job));
  for (uint32_t i = 0; i < v.outputs.count; ++i) {
    IoRecord r = io_record(v.outputs, i);
    if (r.nbytes > 0) memcpy(args[v.inputs.count + i]->u.t->data, ctx.scratch + r.offset, r.nbytes);
  }
  state->last_cycles = g_driver.last_cycles();
  state->total_cycles += state->last_cycles;
  state->executions++;
  g_cycles += state->last_cycles;
  return Error::Ok;
}

}  // namespace

const rt::Backend kEthosUBackend = {kBackendId, sizeof(BackendState), init, execute, prepare};

Error register_backend(const NpuPlatform& platform) {
  RT_CHECK(platform.read32 != nullptr && platform.write32 != nullptr &&
               platform.wait_for_irq != nullptr,
           Error::InvalidArgument, "EthosUBackend: the platform lacks read32/write32/wait_for_irq");
  const TimingAdapters& ta = platform.timing_adapters;
  RT_CHECK(ta.count <= kMaxTimingAdapters &&
               (ta.count == 0 || (ta.configs != nullptr && ta.register_offsets != nullptr)),
           Error::InvalidArgument,
           "EthosUBackend: the platform's timing adapters (%lu) exceed %lu or lack their tables",
           ul(ta.count), ul(kMaxTimingAdapters));
  if (rt::find_backend(kBackendId, strlen(kBackendId)) == nullptr) {
    RT_TRY(rt::register_backend(&kEthosUBackend));
  }
  g_driver = Driver(platform);
  g_platform = platform;
  g_timing_config = kNoTimingConfig;
  g_have_platform = true;
  return Error::Ok;
}

void handle_npu_irq() { g_driver.handle_irq(); }

uint64_t npu_cycles() { return g_cycles; }
void reset_cycles() { g_cycles = 0; }

void unregister_platform() {
  g_driver = Driver();
  g_platform = NpuPlatform{};
  g_timing_config = kNoTimingConfig;
  g_have_platform = false;
}

// The tests need the driver the backend uses (to deliver the model's interrupt).
Driver* backend_driver_for_tests() { return &g_driver; }

}  // namespace ethosu
