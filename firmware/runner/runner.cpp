// The preloaded program blob (runner.h).
#include "runner.h"

#include "bundled_program_schema_generated.h"
#include "console.h"
#include "frame.h"

namespace runner {

using namespace contract;  // NOLINT: the blob layout is the contract's
using hostlink::get_u32;
using rt::ul;

rt::Error open_program_blob(const uint8_t* slot, size_t slot_size, rt::ConstBytes* payload) {
  constexpr rt::Error kError = rt::Error::InvalidProgram;
  RT_CHECK(slot_size >= kProgramBlobHeaderSize, kError,
           "the program slot is smaller than a blob header");
  uint32_t found = get_u32(slot + kProgramBlobHeaderMagic);
  RT_CHECK(found == kProgramBlobMagic, kError,
           "no program blob in its slot: magic is 0x%08lx, expected 0x%08lx (was it preloaded?)",
           ul(found), ul(kProgramBlobMagic));
  uint32_t version = get_u32(slot + kProgramBlobHeaderVersion);
  RT_CHECK(version == kProgramBlobVersion, kError,
           "program blob version %lu, this firmware reads %lu", ul(version),
           ul(kProgramBlobVersion));
  uint32_t size = get_u32(slot + kProgramBlobHeaderPayloadSize);
  RT_CHECK(size <= slot_size - kProgramBlobHeaderSize, kError,
           "program blob payload of %lu bytes does not fit its %lu-byte slot", ul(size),
           ul(slot_size - kProgramBlobHeaderSize));
  for (size_t i = kProgramBlobHeaderReserved; i < kProgramBlobHeaderSize; ++i) {
    RT_CHECK(slot[i] == 0, kError, "program blob header: reserved bytes are not zero");
  }
  uint32_t expected_crc = get_u32(slot + kProgramBlobHeaderCrc32);
  uint32_t crc = crc32(slot + kProgramBlobHeaderSize, size);
  RT_CHECK(crc == expected_crc, kError, "program blob CRC is %08lx, its header says %08lx (corrupt)",
           ul(crc), ul(expected_crc));
  *payload = rt::ConstBytes{slot + kProgramBlobHeaderSize, size};
  return rt::Error::Ok;
}

bool is_bundle(rt::ConstBytes bytes) {
  return bytes.size >= 8 && flatbuffers::BufferHasIdentifier(
                                bytes.data, bundled_program_flatbuffer::BundledProgramIdentifier());
}

rt::Error program_in_bundle(rt::ConstBytes bundle, rt::ConstBytes* program) {
  constexpr rt::Error kError = rt::Error::InvalidProgram;
  RT_CHECK(is_bundle(bundle), kError, "not a bundled program (no BP08 identifier)");
  flatbuffers::Verifier verifier(bundle.data, bundle.size);
  RT_CHECK(bundled_program_flatbuffer::VerifyBundledProgramBuffer(verifier), kError,
           "the bundled program does not verify (damaged or not a .bpte)");
  const auto* root = bundled_program_flatbuffer::GetBundledProgram(bundle.data);
  const flatbuffers::Vector<uint8_t>* bytes = root->program();
  RT_CHECK(bytes != nullptr && bytes->size() > 0, kError, "the bundled program holds no program");
  *program = rt::ConstBytes{bytes->data(), bytes->size()};
  return rt::Error::Ok;
}

}  // namespace runner
