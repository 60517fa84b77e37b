// Program verification: header, extended header, flatbuffer, segments.
//
// Nothing from the .pte is trusted: every offset and size is checked here
// against the buffer before any other code reads through the program.
#include <string.h>

#include "schema.h"
#include "verify.h"

namespace rt {
namespace {

constexpr size_t kIdentifierOffset = 4;
constexpr size_t kExtendedHeaderOffset = 8;
constexpr size_t kExtendedHeaderMinLength = 24;   // magic, length, program size, segment base
constexpr size_t kExtendedHeaderWithDataSize = 32;  // + segment data size
constexpr uint32_t kMaxVerifierDepth = 64;
constexpr uint32_t kMaxVerifierTables = 1u << 22;

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint64_t read_u64(const uint8_t* p) {
  return static_cast<uint64_t>(read_u32(p)) | (static_cast<uint64_t>(read_u32(p + 4)) << 32);
}

struct Layout {
  size_t flatbuffer_size;
  size_t segment_base;
  size_t segment_data_size;
};

// Reads the optional 'eh00' extended header; without it the whole buffer is the flatbuffer.
Error read_layout(const uint8_t* data, size_t size, Layout* layout) {
  layout->flatbuffer_size = size;
  layout->segment_base = 0;
  layout->segment_data_size = 0;
  if (size < kExtendedHeaderOffset + 8 ||
      memcmp(data + kExtendedHeaderOffset, "eh00", 4) != 0) {
    return Error::Ok;
  }
  uint32_t length = read_u32(data + kExtendedHeaderOffset + 4);
  RT_CHECK(length >= kExtendedHeaderMinLength, Error::InvalidProgram,
           "extended header length %lu < %lu", ul(length), ul(kExtendedHeaderMinLength));
  RT_CHECK(length <= size - kExtendedHeaderOffset, Error::InvalidProgram,
           "extended header (%lu bytes) past the end of the %lu-byte program", ul(length),
           ul(size));
  const uint8_t* header = data + kExtendedHeaderOffset;
  uint64_t program_size = read_u64(header + 8);
  uint64_t segment_base = read_u64(header + 16);
  uint64_t segment_data_size = length >= kExtendedHeaderWithDataSize ? read_u64(header + 24) : 0;
  RT_CHECK(program_size >= kExtendedHeaderOffset + length && program_size <= size,
           Error::InvalidProgram,
           "extended header: program size %s outside [%lu, %lu] (truncated?)",
           uint_text(program_size).text, ul(kExtendedHeaderOffset + length), ul(size));
  if (segment_base == 0) {
    RT_CHECK(segment_data_size == 0, Error::InvalidProgram,
             "extended header: %s bytes of segment data but no segment base",
             uint_text(segment_data_size).text);
  } else {
    RT_CHECK(segment_base >= program_size && segment_base <= size, Error::InvalidProgram,
             "extended header: segment base %s outside [%s, %lu] (truncated?)",
             uint_text(segment_base).text, uint_text(program_size).text, ul(size));
    RT_CHECK(segment_data_size <= size - segment_base, Error::InvalidProgram,
             "extended header: segment data (%s bytes at %s) past the end of %lu (truncated?)",
             uint_text(segment_data_size).text, uint_text(segment_base).text, ul(size));
    if (segment_data_size == 0) {
      segment_data_size = size - segment_base;  // older files leave the size out
    }
  }
  layout->flatbuffer_size = static_cast<size_t>(program_size);
  layout->segment_base = static_cast<size_t>(segment_base);
  layout->segment_data_size = static_cast<size_t>(segment_data_size);
  return Error::Ok;
}

Error check_segments(const fb::Program& root, const Layout& layout) {
  const auto* segments = root.segments();
  size_t count = vector_size(segments);
  for (size_t i = 0; i < count; ++i) {
    const fb::DataSegment* segment = segments->Get(static_cast<flatbuffers::uoffset_t>(i));
    RT_CHECK(segment != nullptr, Error::InvalidProgram, "segment %lu is missing", ul(i));
    uint64_t offset = segment->offset();
    uint64_t bytes = segment->size();
    RT_CHECK(offset <= layout.segment_data_size && bytes <= layout.segment_data_size - offset,
             Error::InvalidProgram,
             "segment %lu (%s bytes at %s) outside the %lu bytes of segment data", ul(i),
             uint_text(bytes).text, uint_text(offset).text, ul(layout.segment_data_size));
  }
  const fb::SubsegmentOffsets* constants = root.constant_segment();
  size_t num_offsets = constants == nullptr ? 0 : vector_size(constants->offsets());
  if (num_offsets > 0) {
    RT_CHECK(vector_size(root.constant_buffer()) == 0, Error::InvalidProgram,
             "both constant segment and constant buffer");
    uint32_t index = constants->segment_index();
    RT_CHECK(index < count, Error::InvalidProgram,
             "constant segment %lu out of range (%lu)", ul(index), ul(count));
    uint64_t segment_size = segments->Get(index)->size();
    for (size_t i = 0; i < num_offsets; ++i) {
      uint64_t offset = constants->offsets()->Get(static_cast<flatbuffers::uoffset_t>(i));
      RT_CHECK(offset <= segment_size, Error::InvalidProgram,
               "constant %lu: offset %s past its %s-byte segment", ul(i),
               uint_text(offset).text, uint_text(segment_size).text);
    }
  }
  return Error::Ok;
}

}  // namespace

Result<Program> Program::load(const void* data, size_t size) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  RT_CHECK(bytes != nullptr, Error::InvalidArgument, "no program data");
  RT_CHECK(reinterpret_cast<uintptr_t>(bytes) % kProgramAlignment == 0, Error::InvalidArgument,
           "program buffer at 0x%lx is not %lu-byte aligned",
           static_cast<unsigned long>(reinterpret_cast<uintptr_t>(bytes)), ul(kProgramAlignment));
  RT_CHECK(size >= kExtendedHeaderOffset, Error::InvalidProgram,
           "program is %lu bytes, too short", ul(size));
  RT_CHECK(memcmp(bytes + kIdentifierOffset, fb::ProgramIdentifier(), 4) == 0,
           Error::InvalidProgram,
           "not an ExecuTorch program: identifier %02x%02x%02x%02x, not 'ET12'",
           bytes[4], bytes[5], bytes[6], bytes[7]);
  Layout layout;
  RT_TRY(read_layout(bytes, size, &layout));
  RT_CHECK(layout.flatbuffer_size < FLATBUFFERS_MAX_BUFFER_SIZE, Error::InvalidProgram,
           "program too large (%lu bytes)", ul(layout.flatbuffer_size));
  RT_CHECK(verify_program_buffer(bytes, layout.flatbuffer_size, kMaxVerifierDepth,
                                 kMaxVerifierTables),
           Error::InvalidProgram,
           "flatbuffer verification failed (corrupt or truncated program)");
  const fb::Program* root = fb::GetProgram(bytes);
  RT_TRY(check_segments(*root, layout));
  RT_CHECK(vector_size(root->execution_plan()) > 0, Error::InvalidProgram,
           "no methods");

  Program program;
  program.data_ = bytes;
  program.size_ = size;
  program.flatbuffer_size_ = layout.flatbuffer_size;
  program.segment_base_ = layout.segment_base;
  program.segment_data_size_ = layout.segment_data_size;
  program.root_ = root;
  return program;
}

size_t Program::num_methods() const {
  return root_ == nullptr ? 0 : vector_size(program_root(*this)->execution_plan());
}

const char* Program::method_name(size_t index) const {
  if (index >= num_methods()) {
    return nullptr;
  }
  const fb::ExecutionPlan* plan =
      program_root(*this)->execution_plan()->Get(static_cast<flatbuffers::uoffset_t>(index));
  return plan->name() == nullptr ? "" : plan->name()->c_str();
}

Result<ConstBytes> Program::segment(size_t index) const {
  const auto* segments = root_ == nullptr ? nullptr : program_root(*this)->segments();
  RT_CHECK(index < vector_size(segments), Error::InvalidProgram,
           "segment %lu out of range (%lu)", ul(index),
           ul(vector_size(segments)));
  const fb::DataSegment* segment = segments->Get(static_cast<flatbuffers::uoffset_t>(index));
  // Bounds were checked at load.
  return ConstBytes{data_ + segment_base_ + static_cast<size_t>(segment->offset()),
                    static_cast<size_t>(segment->size())};
}

}  // namespace rt
