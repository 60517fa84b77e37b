// The Ethos-U delegate payload: the Vela binary stream ExecuTorch's Arm backend writes.
//
// A sequence of blocks, each a 32-byte header (name[16] NUL-padded, u32 size, u8 external,
// 11 reserved bytes) and its data zero-padded to 16 bytes. `vela_bin_stream` (empty) comes
// first, `vela_end_stream` (empty) last and ends exactly at the end of the payload. Between
// them exactly once each: cmd_data, weight_data, scratch_size, inputs, outputs.
//
// Decisions (the host's sdk/program/vela_stream.py reads the same format):
//   - an unknown block is refused: the firmware cannot know whether the stream depends on it;
//   - an external block (data resolved through a .ptd) is refused: no named-data support;
//   - header reserved bytes and padding must be zero (Vela writes zeros; anything else is
//     corruption).
// parse_vela_payload() checks everything the backend and the driver later rely on; the view it
// fills points into the payload (nothing is copied), so the payload must outlive it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"

namespace ethosu {

constexpr size_t kBlockHeaderBytes = 32;
constexpr size_t kBlockNameBytes = 16;
constexpr size_t kShapeDims = 6;
constexpr size_t kIoRecordBytes = 9 * 4;  // shape[6], elem_size, offset, region (int32 each)
constexpr uint32_t kMaxIoRecords = 32;    // per direction; Vela delegates have a handful

// Driver actions in cmd_data (bits 7:0 of an action word).
enum class DriverAction : uint8_t { OptimizerConfig = 1, CommandStream = 2, Nop = 5 };

// One decoded inputs/outputs record.
struct IoRecord {
  int32_t shape[kShapeDims];  // the NPU's view, leading 1s
  uint32_t elem_size;         // 1, 2 or 4
  uint32_t offset;            // in the scratch region
  int32_t region;             // not needed at run time (kept for messages)
  uint32_t nbytes;            // product(shape) * elem_size, checked
};

// The records of one direction, still in the payload (little-endian int32s).
struct IoTable {
  const uint8_t* records;
  uint32_t count;
};

struct VelaPayload {
  const uint8_t* payload;  // the whole stream
  size_t payload_size;
  const uint8_t* cmd_data;  // the cmd_data block (starts with COP1)
  uint32_t cmd_data_size;
  uint32_t npu_config;            // OPTIMIZER_CONFIG cfg: the CONFIG register compiled for
  uint32_t npu_id;                // OPTIMIZER_CONFIG id: the ID register compiled for
  const uint8_t* command_stream;  // the NPU's command queue (QBASE), 16-byte aligned offset
  uint32_t command_stream_size;   // bytes (QSIZE), a multiple of 4
  const uint8_t* weights;         // region 0, in place
  uint32_t weights_size;
  uint32_t scratch_size;  // bytes of region 1 the stream uses
  IoTable inputs;
  IoTable outputs;
};

// Parse and validate `size` bytes at `data`. Failures are InvalidProgram (NotSupported for
// external blocks) with a reason naming the block and its offset in the payload.
rt::Error parse_vela_payload(const uint8_t* data, size_t size, VelaPayload* out);

// Record i of a table parse_vela_payload() accepted (i < table.count).
IoRecord io_record(const IoTable& table, uint32_t i);

// "Char", "Short", "Int": the integer type an NPU element size stands for.
const char* elem_size_dtype(uint32_t elem_size);

}  // namespace ethosu
