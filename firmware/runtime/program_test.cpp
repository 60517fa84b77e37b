// Program verification: every corrupt, truncated or tampered program fails
// with a code and a reason, and never crashes (run under ASan/UBSan).
#include <string.h>

#include "program_generated.h"
#include "rt/method.h"
#include "rt/program.h"
#include "test_harness.h"
#include "test_support.h"
#include "verify.h"

using test::Bytes;

namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Loading and (if the program verifies) loading its method: either succeeds or fails with a
// reason. Returns false when something failed without a reason.
bool load_all_or_fail_cleanly(const Bytes& bytes) {
  static uint8_t metadata[1 << 16];
  static uint8_t planned[1 << 16];
  rt::clear_error();
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  if (!program.ok()) {
    return rt::last_error_reason()[0] != '\0';
  }
  rt::Span arena = {planned, sizeof(planned)};
  rt::MethodMemory memory = {{metadata, sizeof(metadata)}, &arena, 1, {nullptr, 0}};
  rt::Result<rt::Method> method = rt::Method::load(program.get(), nullptr, memory);
  return method.ok() || rt::last_error_reason()[0] != '\0';
}

Bytes real_program(const char* name) { return test::fixture_program(name); }

}  // namespace

TEST(real_program_loads) {
  Bytes bytes = real_program("bmm.pte");
  CHECK(bytes.size() > 0);
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  CHECK_OK(program);
  CHECK_EQ(program.get().num_methods(), 1);
  CHECK(strcmp(program.get().method_name(0), "forward") == 0);
  CHECK(program.get().method_name(1) == nullptr);
}

TEST(rejects_null_and_misaligned_buffers) {
  CHECK_ERROR(rt::Program::load(nullptr, 100), InvalidArgument);
  Bytes bytes = real_program("bmm.pte");
  CHECK(bytes.size() > 0);
  Bytes shifted(bytes.size() + 1);
  memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  CHECK_ERROR(rt::Program::load(shifted.data() + 1, bytes.size()), InvalidArgument);
  CHECK_REASON("aligned");
}

TEST(rejects_wrong_identifier) {
  Bytes bytes = real_program("bmm.pte");
  CHECK(bytes.size() > 8);
  memcpy(bytes.data() + 4, "ET11", 4);
  CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
  CHECK_REASON("ET12");
}

TEST(every_truncation_fails_cleanly) {
  Bytes bytes = real_program("bmm.pte");
  CHECK(bytes.size() > 0);
  for (size_t size = 0; size < bytes.size(); ++size) {
    Bytes cut(bytes.data(), size);
    rt::clear_error();
    rt::Result<rt::Program> program = rt::Program::load(cut.data(), cut.size());
    // A cut inside the trailing segment data is caught by the extended header.
    CHECK(!program.ok());
    CHECK(rt::last_error_reason()[0] != '\0');
  }
}

TEST(every_single_bit_flip_fails_cleanly_or_loads) {
  for (const char* name : {"bmm.pte", "add.pte"}) {
    Bytes bytes = real_program(name);
    CHECK(bytes.size() > 0);
    for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
      Bytes flipped = bytes.copy();
      flipped.data()[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      if (!load_all_or_fail_cleanly(flipped)) {
        char what[96];
        snprintf(what, sizeof(what), "%s: bit %zu failed without a reason", name, bit);
        test::record_failure(__FILE__, __LINE__, what);
        return;
      }
    }
  }
}

TEST(rejects_tampered_extended_header) {
  Bytes original = real_program("bmm.pte");
  CHECK(original.size() > 48);
  CHECK(memcmp(original.data() + 8, "eh00", 4) == 0);
  uint8_t* header;
  {
    Bytes bytes = original.copy();
    header = bytes.data() + 8;
    put_u32(header + 4, 16);  // length below the minimum
    CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
    CHECK_REASON("length");
  }
  {
    Bytes bytes = original.copy();
    put_u64(bytes.data() + 8 + 8, bytes.size() + 1);  // program size past the end
    CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
    CHECK_REASON("program size");
  }
  {
    Bytes bytes = original.copy();
    put_u64(bytes.data() + 8 + 16, bytes.size() + 64);  // segment base past the end
    CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
    CHECK_REASON("segment base");
  }
  {
    Bytes bytes = original.copy();
    put_u64(bytes.data() + 8 + 24, uint64_t{1} << 40);  // segment data size past the end
    CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
    CHECK_REASON("segment data");
  }
  {
    Bytes bytes = original.copy();
    put_u64(bytes.data() + 8 + 16, 0);  // segments listed with data, but no segment base
    CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
  }
}

TEST(rejects_garbage) {
  Bytes bytes(4096);
  for (size_t i = 0; i < bytes.size(); ++i) bytes.data()[i] = static_cast<uint8_t>(i * 37 + 11);
  memcpy(bytes.data() + 4, "ET12", 4);
  CHECK_ERROR(rt::Program::load(bytes.data(), bytes.size()), InvalidProgram);
  CHECK_ERROR(rt::Program::load(bytes.data(), 7), InvalidProgram);
  CHECK_REASON("too short");
}

TEST(segment_index_is_checked) {
  Bytes bytes = real_program("bmm.pte");
  rt::Result<rt::Program> program = rt::Program::load(bytes.data(), bytes.size());
  CHECK_OK(program);
  CHECK_OK(program.get().segment(0));
  CHECK_ERROR(program.get().segment(1), InvalidProgram);
  CHECK_ERROR(program.get().segment(SIZE_MAX), InvalidProgram);
}

// The runtime's verifier checks only what the runtime reads: it accepts at least everything
// flatc's full verifier accepts (and the fuzz target shows that what it accepts is safe), except
// 8-byte vector elements that are not 8-byte aligned, which only the runtime's refuses.
TEST(own_verifier_accepts_whatever_the_full_verifier_accepts) {
  size_t agreed = 0;
  for (const char* name : {"bmm.pte", "add.pte", "quant_mix.pte", "delegate.pte"}) {
    Bytes bytes = real_program(name);
    CHECK(bytes.size() > 0);
    for (size_t bit = 0; bit < bytes.size() * 8; bit += 3) {
      Bytes flipped = bytes.copy();
      flipped.data()[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      flatbuffers::Verifier full(flipped.data(), flipped.size());
      bool full_ok = executorch_flatbuffer::VerifyProgramBuffer(full);
      bool own_ok =
          rt::verify_program_buffer(flipped.data(), flipped.size(), 64, 1u << 20, false);
      if (full_ok && !own_ok) {
        char what[96];
        snprintf(what, sizeof(what), "%s: bit %zu: full verifier accepts, own rejects", name, bit);
        test::record_failure(__FILE__, __LINE__, what);
        return;
      }
      agreed += full_ok ? 1 : 0;
    }
  }
  CHECK(agreed > 100);  // the comparison saw many valid programs, not only rejections
}

TEST(own_verifier_rejects_what_the_runtime_would_misread) {
  Bytes bytes = real_program("add.pte");
  CHECK(bytes.size() > 0);
  CHECK(rt::verify_program_buffer(bytes.data(), bytes.size(), 64, 1u << 20));
  CHECK(!rt::verify_program_buffer(bytes.data(), bytes.size() / 2, 64, 1u << 20));
  CHECK(!rt::verify_program_buffer(bytes.data(), bytes.size(), 2, 1u << 20));  // too deep
  CHECK(!rt::verify_program_buffer(bytes.data(), bytes.size(), 64, 3));         // too many tables
  memcpy(bytes.data() + 4, "XXXX", 4);
  CHECK(!rt::verify_program_buffer(bytes.data(), bytes.size(), 64, 1u << 20));
}

TEST(misaligned_64_bit_elements_are_refused) {
  // Some single-bit flips of bmm.pte move an 8-byte vector by 4 bytes: flatc's verifier
  // accepts that.
  Bytes bytes = real_program("bmm.pte");
  CHECK(bytes.size() > 1431 / 8);
  bool found = false;
  for (size_t bit = 0; bit < bytes.size() * 8 && !found; ++bit) {
    Bytes flipped = bytes.copy();
    flipped.data()[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    flatbuffers::Verifier full(flipped.data(), flipped.size());
    if (executorch_flatbuffer::VerifyProgramBuffer(full) &&
        !rt::verify_program_buffer(flipped.data(), flipped.size(), 64, 1u << 20)) {
      found = rt::verify_program_buffer(flipped.data(), flipped.size(), 64, 1u << 20, false);
    }
  }
  CHECK(found);
}
