// The Vela binary stream parser (see vela_payload.h). Every read is bounds-checked against
// the payload; words are read with memcpy (the payload's alignment is the caller's).
#include "vela_payload.h"

#include <string.h>

namespace ethosu {
namespace {

using rt::Error;
using rt::fail;
using rt::ul;

constexpr uint32_t kFourccCop1 = 0x31504F43;  // "COP1" little-endian
constexpr uint32_t kMaxBytes = 0x7FFFFFFF;    // as the runtime: byte counts stay under 2^31

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

int32_t load_i32(const uint8_t* p) {
  int32_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

enum BlockId { kStart, kCmd, kWeights, kScratch, kInputs, kOutputs, kEnd, kNumBlocks };
const char* const kBlockNames[kNumBlocks] = {"vela_bin_stream", "cmd_data",  "weight_data",
                                             "scratch_size",    "inputs",    "outputs",
                                             "vela_end_stream"};

struct Block {
  const uint8_t* data;
  uint32_t size;
  size_t offset;  // of the header in the payload
  bool seen;
};

// The name field: 1..15 printable characters, then NULs to the end of the 16 bytes.
Error read_name(const uint8_t* field, size_t offset, char name[kBlockNameBytes]) {
  size_t len = 0;
  while (len < kBlockNameBytes && field[len] != 0) {
    RT_CHECK(field[len] >= 0x21 && field[len] <= 0x7E, Error::InvalidProgram,
             "Vela payload: block at offset %lu: name byte %lu is not printable", ul(offset),
             ul(len));
    ++len;
  }
  RT_CHECK(len > 0 && len < kBlockNameBytes, Error::InvalidProgram,
           "Vela payload: block at offset %lu: name is %s", ul(offset),
           len == 0 ? "empty" : "not NUL-terminated within 16 bytes");
  for (size_t i = len; i < kBlockNameBytes; ++i) {
    RT_CHECK(field[i] == 0, Error::InvalidProgram,
             "Vela payload: block at offset %lu: name is not NUL-padded", ul(offset));
  }
  memcpy(name, field, len + 1);
  return Error::Ok;
}

// `min_count`: a delegate may have no inputs (all its data constant: Vela writes a count of 0),
// but one without outputs computes nothing anyone reads, so outputs start at 1.
Error parse_io(const Block& b, const char* what, int32_t min_count, uint32_t scratch_size,
               IoTable* out) {
  RT_CHECK(b.size >= 4, Error::InvalidProgram,
           "Vela payload: block '%s' at offset %lu: %lu bytes, shorter than its count", what,
           ul(b.offset), ul(b.size));
  int32_t count = load_i32(b.data);
  RT_CHECK(count >= min_count && static_cast<uint32_t>(count) <= kMaxIoRecords,
           Error::InvalidProgram,
           "Vela payload: block '%s' at offset %lu: %ld records (%ld..%lu supported)", what,
           ul(b.offset), static_cast<long>(count), static_cast<long>(min_count),
           ul(kMaxIoRecords));
  size_t expected = 4 + static_cast<size_t>(count) * kIoRecordBytes;  // small: count bounded
  RT_CHECK(b.size == expected, Error::InvalidProgram,
           "Vela payload: block '%s' at offset %lu: %lu bytes for %ld records (expected %lu)",
           what, ul(b.offset), ul(b.size), static_cast<long>(count), ul(expected));
  out->records = b.data + 4;
  out->count = static_cast<uint32_t>(count);
  for (uint32_t i = 0; i < out->count; ++i) {
    const uint8_t* r = out->records + i * kIoRecordBytes;
    uint64_t numel = 1;
    for (size_t d = 0; d < kShapeDims; ++d) {
      int32_t s = load_i32(r + 4 * d);
      RT_CHECK(s >= 0, Error::InvalidProgram,
               "Vela payload: block '%s' at offset %lu: record %lu: shape[%lu] is %ld", what,
               ul(b.offset), ul(i), ul(d), static_cast<long>(s));
      numel *= static_cast<uint64_t>(s);  // six factors under 2^31 each: saturate below
      if (numel > kMaxBytes) {
        numel = uint64_t{kMaxBytes} + 1;
      }
    }
    int32_t elem = load_i32(r + 24);
    int32_t offset = load_i32(r + 28);
    RT_CHECK(elem == 1 || elem == 2 || elem == 4, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: record %lu: element size %ld (1, 2 or 4)",
             what, ul(b.offset), ul(i), static_cast<long>(elem));
    RT_CHECK(offset >= 0, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: record %lu: scratch offset %ld", what,
             ul(b.offset), ul(i), static_cast<long>(offset));
    uint64_t nbytes = numel * static_cast<uint64_t>(elem);
    RT_CHECK(nbytes <= kMaxBytes, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: record %lu: shape and element size make "
             "2^31 bytes or more",
             what, ul(b.offset), ul(i));
    uint64_t end = nbytes + static_cast<uint64_t>(offset);
    RT_CHECK(end <= scratch_size, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: record %lu: %lu bytes at scratch offset "
             "%ld pass the scratch size %lu",
             what, ul(b.offset), ul(i), ul(static_cast<uint32_t>(nbytes)),
             static_cast<long>(offset), ul(scratch_size));
  }
  return Error::Ok;
}

// cmd_data: COP1, then driver actions. Exactly one OPTIMIZER_CONFIG, before exactly one
// COMMAND_STREAM; NOPs pad; anything else is refused (the reference driver refuses it too).
Error parse_cmd(const Block& b, VelaPayload* out) {
  const size_t base = b.offset + kBlockHeaderBytes;  // payload offset of the block's data
  RT_CHECK(b.size >= 4 && b.size % 4 == 0, Error::InvalidProgram,
           "Vela payload: block 'cmd_data' at offset %lu: %lu bytes, not whole words",
           ul(b.offset), ul(b.size));
  RT_CHECK(load_u32(b.data) == kFourccCop1, Error::InvalidProgram,
           "Vela payload: block 'cmd_data' at offset %lu: does not start with COP1",
           ul(b.offset));
  bool have_config = false;
  bool have_stream = false;
  size_t pos = 4;
  while (pos < b.size) {
    uint32_t word = load_u32(b.data + pos);
    size_t at = base + pos;
    switch (static_cast<DriverAction>(word & 0xFF)) {
      case DriverAction::OptimizerConfig:
        RT_CHECK(!have_config && !have_stream, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: %s", ul(at),
                 have_config ? "a second OPTIMIZER_CONFIG"
                             : "OPTIMIZER_CONFIG after the command stream");
        RT_CHECK(b.size - pos >= 12, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: OPTIMIZER_CONFIG lacks its cfg and id "
                 "words",
                 ul(at));
        out->npu_config = load_u32(b.data + pos + 4);
        out->npu_id = load_u32(b.data + pos + 8);
        have_config = true;
        pos += 12;
        break;
      case DriverAction::CommandStream: {
        // Length in words: bits 31:16, with bits 15:8 as its high byte (24 bits in all).
        uint32_t words = ((word >> 8) & 0xFF) << 16 | (word >> 16);
        size_t start = pos + 4;
        RT_CHECK(!have_stream, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: a second COMMAND_STREAM", ul(at));
        RT_CHECK(have_config, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: COMMAND_STREAM before OPTIMIZER_CONFIG",
                 ul(at));
        RT_CHECK(words > 0 && words <= (b.size - start) / 4, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: COMMAND_STREAM of %lu words, %lu bytes "
                 "left in the block",
                 ul(at), ul(words), ul(b.size - start));
        // The NPU fetches its queue in 16-byte units (the reference driver refuses less).
        RT_CHECK((base + start) % 16 == 0, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: the command stream starts at offset "
                 "%lu, not 16-byte aligned",
                 ul(at), ul(base + start));
        uint32_t last = load_u32(b.data + start + (words - 1) * 4);
        RT_CHECK((last & 0xFFFF) == 0, Error::InvalidProgram,
                 "Vela payload: cmd_data at offset %lu: the command stream ends with 0x%08lx, "
                 "not NPU_OP_STOP",
                 ul(at), ul(last));
        out->command_stream = b.data + start;
        out->command_stream_size = words * 4;
        have_stream = true;
        pos = start + static_cast<size_t>(words) * 4;
        break;
      }
      case DriverAction::Nop:
        pos += 4;
        break;
      default:
        return fail(Error::InvalidProgram,
                    "Vela payload: cmd_data at offset %lu: driver action %lu (word 0x%08lx) "
                    "not supported",
                    ul(at), ul(word & 0xFF), ul(word));
    }
  }
  RT_CHECK(have_config, Error::InvalidProgram,
           "Vela payload: block 'cmd_data' at offset %lu: no OPTIMIZER_CONFIG", ul(b.offset));
  RT_CHECK(have_stream, Error::InvalidProgram,
           "Vela payload: block 'cmd_data' at offset %lu: no COMMAND_STREAM", ul(b.offset));
  return Error::Ok;
}

}  // namespace

Error parse_vela_payload(const uint8_t* data, size_t size, VelaPayload* out) {
  memset(out, 0, sizeof(*out));
  RT_CHECK(data != nullptr && size > 0, Error::InvalidProgram, "Vela payload: empty");
  RT_CHECK(size <= kMaxBytes, Error::InvalidProgram, "Vela payload: %lu bytes, too large",
           ul(size));
  Block blocks[kNumBlocks] = {};
  size_t pos = 0;
  bool ended = false;
  while (pos < size && !ended) {
    RT_CHECK(size - pos >= kBlockHeaderBytes, Error::InvalidProgram,
             "Vela payload: truncated block header at offset %lu (%lu bytes left)", ul(pos),
             ul(size - pos));
    const uint8_t* header = data + pos;
    char name[kBlockNameBytes];
    RT_TRY(read_name(header, pos, name));
    uint32_t block_size = load_u32(header + 16);
    uint8_t external = header[20];
    for (size_t i = 21; i < kBlockHeaderBytes; ++i) {
      RT_CHECK(header[i] == 0, Error::InvalidProgram,
               "Vela payload: block '%s' at offset %lu: reserved header byte %lu is not zero",
               name, ul(pos), ul(i));
    }
    size_t id = 0;
    while (id < kNumBlocks && strcmp(kBlockNames[id], name) != 0) {
      ++id;
    }
    RT_CHECK(id < kNumBlocks, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: unknown block", name, ul(pos));
    RT_CHECK(external == 0, Error::NotSupported,
             "Vela payload: block '%s' at offset %lu: external data (named data in a .ptd) is "
             "not supported",
             name, ul(pos));
    RT_CHECK(!blocks[id].seen, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: appears again (first at offset %lu)", name,
             ul(pos), ul(blocks[id].offset));
    RT_CHECK((pos == 0) == (id == kStart), Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: %s", name, ul(pos),
             pos == 0 ? "the stream must start with vela_bin_stream"
                      : "vela_bin_stream must come first");
    size_t start = pos + kBlockHeaderBytes;
    size_t left = size - start;
    RT_CHECK(block_size <= left, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: %lu bytes, %lu left in the payload", name,
             ul(pos), ul(block_size), ul(left));
    size_t padded = (static_cast<size_t>(block_size) + 15) & ~size_t{15};
    RT_CHECK(padded <= left, Error::InvalidProgram,
             "Vela payload: block '%s' at offset %lu: padding to 16 bytes passes the end", name,
             ul(pos));
    for (size_t i = start + block_size; i < start + padded; ++i) {
      RT_CHECK(data[i] == 0, Error::InvalidProgram,
               "Vela payload: block '%s' at offset %lu: padding byte at offset %lu is not zero",
               name, ul(pos), ul(i));
    }
    if (id == kStart || id == kEnd) {
      RT_CHECK(block_size == 0, Error::InvalidProgram,
               "Vela payload: block '%s' at offset %lu: %lu bytes, must be empty", name, ul(pos),
               ul(block_size));
    }
    blocks[id] = Block{data + start, block_size, pos, true};
    pos = start + padded;
    ended = id == kEnd;
  }
  RT_CHECK(ended, Error::InvalidProgram, "Vela payload: no vela_end_stream (%lu bytes)",
           ul(size));
  RT_CHECK(pos == size, Error::InvalidProgram,
           "Vela payload: vela_end_stream at offset %lu ends at %lu, the payload at %lu",
           ul(blocks[kEnd].offset), ul(pos), ul(size));
  for (size_t id = kCmd; id < kEnd; ++id) {
    RT_CHECK(blocks[id].seen, Error::InvalidProgram, "Vela payload: no '%s' block",
             kBlockNames[id]);
  }

  const Block& scratch = blocks[kScratch];
  RT_CHECK(scratch.size == 4, Error::InvalidProgram,
           "Vela payload: block 'scratch_size' at offset %lu: %lu bytes, not one u32",
           ul(scratch.offset), ul(scratch.size));
  out->scratch_size = load_u32(scratch.data);
  RT_CHECK(out->scratch_size <= kMaxBytes, Error::InvalidProgram,
           "Vela payload: block 'scratch_size' at offset %lu: %lu bytes, too large",
           ul(scratch.offset), ul(out->scratch_size));
  RT_TRY(parse_io(blocks[kInputs], "inputs", 0, out->scratch_size, &out->inputs));
  RT_TRY(parse_io(blocks[kOutputs], "outputs", 1, out->scratch_size, &out->outputs));
  RT_TRY(parse_cmd(blocks[kCmd], out));
  out->payload = data;
  out->payload_size = size;
  out->cmd_data = blocks[kCmd].data;
  out->cmd_data_size = blocks[kCmd].size;
  out->weights = blocks[kWeights].data;
  out->weights_size = blocks[kWeights].size;
  return Error::Ok;
}

IoRecord io_record(const IoTable& table, uint32_t i) {
  IoRecord r;
  const uint8_t* p = table.records + static_cast<size_t>(i) * kIoRecordBytes;
  uint32_t numel = 1;
  for (size_t d = 0; d < kShapeDims; ++d) {
    r.shape[d] = load_i32(p + 4 * d);
    numel *= static_cast<uint32_t>(r.shape[d]);  // fits: checked at parse
  }
  r.elem_size = load_u32(p + 24);
  r.offset = load_u32(p + 28);
  r.region = load_i32(p + 32);
  r.nbytes = numel * r.elem_size;
  return r;
}

const char* elem_size_dtype(uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return "Char";
    case 2:
      return "Short";
    case 4:
      return "Int";
    default:
      return "?";
  }
}

}  // namespace ethosu
