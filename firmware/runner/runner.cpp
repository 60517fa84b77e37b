// executor_runner's board-independent part (see runner.h, docs/firmware.md).
#include "runner.h"

#include <string.h>

#include "platform.h"
#include "record.h"

namespace runner {
namespace {

constexpr size_t kInputsHeaderSize = 8;
constexpr size_t kInputRecordSize = 48;
constexpr size_t kInputAlignment = 16;

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

rt::Error set_inputs(Session& session, rt::ConstBytes inputs) {
  RT_CHECK(inputs.size >= kInputsHeaderSize, rt::Error::InvalidInputs,
           "the inputs payload is %lu bytes, shorter than its header", ul(inputs.size));
  uint32_t count = read_u32(inputs.data);
  RT_CHECK(read_u32(inputs.data + 4) == 0, rt::Error::InvalidInputs,
           "the inputs header's reserved word is not zero");
  RT_CHECK(count <= (inputs.size - kInputsHeaderSize) / kInputRecordSize,
           rt::Error::InvalidInputs, "the inputs payload (%lu bytes) cannot hold %lu records",
           ul(inputs.size), ul(count));
  RT_CHECK(count == session.num_inputs(), rt::Error::InputMismatch,
           "%lu inputs given, the program takes %lu", ul(count), ul(session.num_inputs()));
  for (size_t i = 0; i < count; ++i) {
    InputRecord record;
    RT_TRY(read_input_record(inputs, i, count, &record));
    TensorDesc desc = {record.dtype, record.ndim, record.nbytes, {}};
    memcpy(desc.sizes, record.sizes, sizeof(desc.sizes));
    RT_TRY(session.set_input(i, desc, inputs.data + record.offset));
  }
  return rt::Error::Ok;
}

int report_error(rt::Error err) {
  Line line;
  line.text("@sdk result status=error code=").u64(static_cast<uint8_t>(err));
  line.text(" name=").text(rt::error_name(err)).text(" reason=").quoted(rt::last_error_reason());
  line.end();
  return static_cast<int>(err);
}

int run(Session& session, rt::ConstBytes program, rt::ConstBytes inputs, Reporter& reporter,
        const RunOptions& options) {
  rt::Error err = session.load(program);
  if (err != rt::Error::Ok) {
    reporter.failed(err);
    return static_cast<int>(err);
  }
  reporter.memory(session.memory_use());
  err = set_inputs(session, inputs);
  if (err == rt::Error::Ok) {
    err = session.check_outputs();
  }
  RunTiming timing;
  if (err == rt::Error::Ok) {
    err = session.execute(1, &timing);
    // --outputs-on-error: what the outputs hold after the failure, when they still are
    // tensors; the failure's own reason is the result either way.
    if (err != rt::Error::Ok && options.outputs_on_error && session.outputs_are_tensors()) {
      for (size_t i = 0; i < session.num_outputs(); ++i) {
        const rt::Tensor* tensor = nullptr;
        (void)session.output_tensor(i, &tensor);
        reporter.output(i, *tensor);
      }
    }
  }
  for (size_t i = 0; err == rt::Error::Ok && i < session.num_outputs(); ++i) {
    const rt::Tensor* tensor = nullptr;
    err = session.output_tensor(i, &tensor);
  }
  if (err != rt::Error::Ok) {
    reporter.failed(err);
    return static_cast<int>(err);
  }
  for (size_t i = 0; i < session.num_outputs(); ++i) {
    const rt::Tensor* tensor = nullptr;
    (void)session.output_tensor(i, &tensor);  // checked above
    reporter.output(i, *tensor);
  }
  reporter.passed(session.num_outputs(), session.init_ticks(), timing.total_ticks,
                  platform_tick_hz());
  return 0;
}

int run(rt::ConstBytes program, rt::ConstBytes inputs, const RunnerMemory& memory,
        const RunOptions& options) {
  Session session(memory);
  TextReporter reporter;
  return run(session, program, inputs, reporter, options);
}

}  // namespace runner
