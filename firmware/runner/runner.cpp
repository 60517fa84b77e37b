// executor_runner's board-independent part (see runner.h, docs/firmware.md).
#include "runner.h"

#include <string.h>

#include "platform.h"
#include "record.h"
#include "rt/method.h"
#include "rt/program.h"

namespace runner {
namespace {

constexpr size_t kInputsHeaderSize = 8;
constexpr size_t kInputRecordSize = 48;
constexpr size_t kInputAlignment = 16;
constexpr size_t kBytesPerDataLine = 64;

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

using rt::ul;

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) {
      return false;
    }
  }
  return true;
}

struct InputRecord {
  uint8_t dtype;
  uint8_t ndim;
  uint32_t nbytes;
  uint32_t offset;
  int32_t sizes[8];
};

rt::Error read_input_record(rt::ConstBytes inputs, size_t i, size_t count, InputRecord* out) {
  const uint8_t* r = inputs.data + kInputsHeaderSize + i * kInputRecordSize;
  out->dtype = r[0];
  out->ndim = r[1];
  out->nbytes = read_u32(r + 4);
  out->offset = read_u32(r + 8);
  RT_CHECK(r[2] == 0 && r[3] == 0 && read_u32(r + 12) == 0, rt::Error::InvalidInputs,
           "input %lu: reserved fields are not zero", ul(i));
  RT_CHECK(out->ndim <= rt::kMaxDims, rt::Error::InvalidInputs,
           "input %lu: %u dimensions, at most %d", ul(i), out->ndim, rt::kMaxDims);
  for (size_t d = 0; d < 8; ++d) {
    out->sizes[d] = static_cast<int32_t>(read_u32(r + 16 + 4 * d));
    RT_CHECK(d < out->ndim || out->sizes[d] == 0, rt::Error::InvalidInputs,
             "input %lu: size %lu beyond its %u dimensions is not zero", ul(i), ul(d), out->ndim);
  }
  size_t data_start = kInputsHeaderSize + count * kInputRecordSize;
  RT_CHECK(out->offset % kInputAlignment == 0, rt::Error::InvalidInputs,
           "input %lu: data offset %lu is not %lu-byte aligned", ul(i), ul(out->offset),
           ul(kInputAlignment));
  RT_CHECK(out->offset >= data_start && out->offset <= inputs.size &&
               out->nbytes <= inputs.size - out->offset,
           rt::Error::InvalidInputs,
           "input %lu: %lu bytes at offset %lu lie outside the data area [%lu, %lu)", ul(i),
           ul(out->nbytes), ul(out->offset), ul(data_start), ul(inputs.size));
  return rt::Error::Ok;
}

rt::Error check_input(size_t i, const InputRecord& record, const rt::Tensor& tensor) {
  rt::ScalarType dtype = static_cast<rt::ScalarType>(record.dtype);
  RT_CHECK(dtype == tensor.dtype, rt::Error::InputMismatch,
           "input %lu: dtype %s (%u) given, the program takes %s", ul(i),
           rt::scalar_type_name(dtype), record.dtype, rt::scalar_type_name(tensor.dtype));
  bool same_shape = record.ndim == tensor.dim;
  for (size_t d = 0; same_shape && d < tensor.dim; ++d) {
    same_shape = record.sizes[d] == tensor.sizes[d];
  }
  RT_CHECK(same_shape, rt::Error::InputMismatch,
           "input %lu: shape %s given, the program takes %s", ul(i),
           shape_text(record.sizes, record.ndim).text,
           shape_text(tensor.sizes, tensor.dim).text);
  RT_CHECK(record.nbytes == tensor.nbytes, rt::Error::InputMismatch,
           "input %lu: %lu bytes given, the program's tensor has %lu", ul(i), ul(record.nbytes),
           ul(tensor.nbytes));
  return rt::Error::Ok;
}

rt::Error set_inputs(rt::Method& method, rt::ConstBytes inputs) {
  RT_CHECK(inputs.size >= kInputsHeaderSize, rt::Error::InvalidInputs,
           "the inputs payload is %lu bytes, shorter than its header", ul(inputs.size));
  uint32_t count = read_u32(inputs.data);
  RT_CHECK(read_u32(inputs.data + 4) == 0, rt::Error::InvalidInputs,
           "the inputs header's reserved word is not zero");
  RT_CHECK(count <= (inputs.size - kInputsHeaderSize) / kInputRecordSize,
           rt::Error::InvalidInputs, "the inputs payload (%lu bytes) cannot hold %lu records",
           ul(inputs.size), ul(count));
  RT_CHECK(count == method.num_inputs(), rt::Error::InputMismatch,
           "%lu inputs given, the program takes %lu", ul(count), ul(method.num_inputs()));
  for (size_t i = 0; i < count; ++i) {
    InputRecord record;
    RT_TRY(read_input_record(inputs, i, count, &record));
    const rt::Value* value = method.input(i);
    RT_CHECK(value->is_tensor(), rt::Error::NotSupported,
             "input %lu is %s; only tensor inputs are supported", ul(i), rt::tag_name(value->tag));
    RT_TRY(check_input(i, record, *value->u.t));
    RT_TRY(method.set_input(i, inputs.data + record.offset, record.nbytes));
  }
  return rt::Error::Ok;
}

// The first output that is not a tensor, or num_outputs() when all are.
size_t first_non_tensor_output(const rt::Method& method) {
  size_t i = 0;
  while (i < method.num_outputs() && method.output(i)->is_tensor()) {
    ++i;
  }
  return i;
}

// Before execute() (NotSupported: the program has a non-tensor output) and again after it
// (Internal): the outputs are read through their values, and the runtime refuses moves that
// change a value's kind at load, so a change here is a kernel or delegate that broke a value;
// never print through whatever it left there.
rt::Error check_outputs(const rt::Method& method, bool executed) {
  size_t i = first_non_tensor_output(method);
  RT_CHECK(i == method.num_outputs(), executed ? rt::Error::Internal : rt::Error::NotSupported,
           "output %lu is %s%s", ul(i), rt::tag_name(method.output(i)->tag),
           executed ? " after execute(), no longer a tensor"
                    : "; only tensor outputs are supported");
  return rt::Error::Ok;
}

void print_output(size_t index, const rt::Tensor& tensor) {
  const uint8_t* data = static_cast<const uint8_t*>(tensor.data);
  Line line;
  line.text("@sdk output index=").u64(index).text(" dtype=").u64(static_cast<uint8_t>(tensor.dtype));
  line.text(" sizes=");
  for (size_t d = 0; d < tensor.dim; ++d) {
    if (d > 0) {
      line.text(",");
    }
    line.i64(tensor.sizes[d]);
  }
  line.text(" nbytes=").u64(tensor.nbytes).text(" crc=").hex32(crc32(data, tensor.nbytes));
  line.end();
  for (size_t offset = 0; offset < tensor.nbytes; offset += kBytesPerDataLine) {
    size_t n = tensor.nbytes - offset < kBytesPerDataLine ? tensor.nbytes - offset
                                                          : kBytesPerDataLine;
    Line data_line;
    data_line.text("@sdk data index=").u64(index).text(" offset=").u64(offset).text(" hex=");
    data_line.hex_bytes(data + offset, n).end();
  }
}

void print_outputs(const rt::Method& method) {
  for (size_t i = 0; i < method.num_outputs(); ++i) {
    print_output(i, *method.output(i)->u.t);
  }
}

void print_memory(const rt::MemoryUse& use) {
  Line line;
  line.text("@sdk memory planned_used=").u64(use.planned_used);
  line.text(" planned_size=").u64(use.planned_size);
  line.text(" meta_used=").u64(use.metadata_used);
  line.text(" meta_size=").u64(use.metadata_size);
  line.end();
}

}  // namespace

void begin(const char* board) {
  Line line;
  line.text("@sdk begin v=1 board=").text(board).end();
}

void log(const char* text) {
  Line line;
  line.text("executor_runner: ").text(text).end();
}

rt::Error open_blob(const uint8_t* slot, size_t slot_size, uint32_t magic, rt::Error error,
                    rt::ConstBytes* payload) {
  const char* what = magic == kProgramMagic ? "program" : "inputs";
  RT_CHECK(slot_size >= kBlobHeaderSize, error, "the %s slot is smaller than a blob header", what);
  uint32_t found = read_u32(slot);
  RT_CHECK(found == magic, error,
           "no %s blob in its slot: magic is 0x%08lx, expected 0x%08lx (was it preloaded?)", what,
           ul(found), ul(magic));
  uint32_t version = read_u32(slot + 4);
  RT_CHECK(version == kBlobVersion, error, "%s blob version %lu, this firmware reads %lu", what,
           ul(version), ul(kBlobVersion));
  uint32_t size = read_u32(slot + 8);
  RT_CHECK(size <= slot_size - kBlobHeaderSize, error,
           "%s blob payload of %lu bytes does not fit its %lu-byte slot", what, ul(size),
           ul(slot_size - kBlobHeaderSize));
  RT_CHECK(all_zero(slot + 16, 16), error, "%s blob header: reserved bytes are not zero", what);
  uint32_t expected_crc = read_u32(slot + 12);
  uint32_t crc = crc32(slot + kBlobHeaderSize, size);
  RT_CHECK(crc == expected_crc, error, "%s blob CRC is %08lx, its header says %08lx (corrupt)",
           what, ul(crc), ul(expected_crc));
  *payload = rt::ConstBytes{slot + kBlobHeaderSize, size};
  return rt::Error::Ok;
}

int report_error(rt::Error err) {
  Line line;
  line.text("@sdk result status=error code=").u64(static_cast<uint8_t>(err));
  line.text(" name=").text(rt::error_name(err)).text(" reason=").quoted(rt::last_error_reason());
  line.end();
  return static_cast<int>(err);
}

int run(rt::ConstBytes program_bytes, rt::ConstBytes inputs, const RunnerMemory& memory,
        const RunOptions& options) {
  uint64_t init_start = platform_ticks();
  rt::Result<rt::Program> program = rt::Program::load(program_bytes.data, program_bytes.size);
  if (!program.ok()) {
    return report_error(program.error());
  }
  rt::MethodMemory method_memory = {memory.metadata, &memory.planned, 1, memory.scratch};
  rt::Result<rt::Method> method = rt::Method::load(program.get(), nullptr, method_memory);
  if (!method.ok()) {
    return report_error(method.error());
  }
  uint64_t init_ticks = platform_ticks() - init_start;
  print_memory(method.get().memory_use());

  rt::Error err = set_inputs(method.get(), inputs);
  if (err == rt::Error::Ok) {
    err = check_outputs(method.get(), false);
  }
  if (err != rt::Error::Ok) {
    return report_error(err);
  }
  uint64_t run_start = platform_ticks();
  err = method.get().execute();
  uint64_t run_ticks = platform_ticks() - run_start;
  if (err != rt::Error::Ok) {
    // --outputs-on-error: what the outputs hold after the failure, when they still are
    // tensors; the failure's own reason is the result either way.
    if (options.outputs_on_error &&
        first_non_tensor_output(method.get()) == method.get().num_outputs()) {
      print_outputs(method.get());
    }
    return report_error(err);
  }
  err = check_outputs(method.get(), true);
  if (err != rt::Error::Ok) {
    return report_error(err);
  }
  print_outputs(method.get());
  Line line;
  line.text("@sdk result status=ok outputs=").u64(method.get().num_outputs());
  line.text(" init_ticks=").u64(init_ticks).text(" run_ticks=").u64(run_ticks);
  line.text(" tick_hz=").u64(platform_tick_hz()).end();
  return 0;
}

}  // namespace runner
