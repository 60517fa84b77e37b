// The program slot's blob, and the session's checks of the inputs against the program.
#include <string.h>

#include "console.h"
#include "rt/method.h"
#include "runner.h"
#include "test_harness.h"
#include "test_support.h"

using rt::ScalarType;
using test::Bytes;

namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

Bytes blob(const uint8_t* payload, size_t size) {
  Bytes b(contract::kProgramBlobHeaderSize + size);
  put_u32(b.data(), contract::kProgramBlobMagic);
  put_u32(b.data() + 4, contract::kProgramBlobVersion);
  put_u32(b.data() + 8, static_cast<uint32_t>(size));
  put_u32(b.data() + 12, runner::crc32(payload, size));
  memcpy(b.data() + contract::kProgramBlobHeaderSize, payload, size);
  return b;
}

// x + 1 * y over [2, 3] floats with the placeholder add kernel.
Bytes add_program() {
  test::ProgramBuilder p;
  int a = p.planned(ScalarType::Float, {2, 3}, 0);
  int b = p.planned(ScalarType::Float, {2, 3}, 32);
  int alpha = p.int_value(1);
  int out = p.planned(ScalarType::Float, {2, 3}, 64);
  p.kernel_call(p.op("aten::add", "out"), {a, b, alpha, out, out});
  p.set_inputs({a, b});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 96});
  return p.finish();
}

alignas(16) uint8_t g_metadata[1 << 16];
alignas(16) uint8_t g_planned[1 << 16];
const runner::RunnerMemory kMemory = {{g_metadata, sizeof(g_metadata)},
                                      {g_planned, sizeof(g_planned)},
                                      {nullptr, 0}};

// A session with `program` loaded (the caller keeps `program` alive).
struct Loaded {
  runner::Session session{kMemory};
  explicit Loaded(const Bytes& program) {
    rt::clear_error();
    CHECK_OK(session.load({program.data(), program.size()}));
  }
};

runner::TensorDesc desc(ScalarType dtype, std::vector<int32_t> sizes, uint32_t nbytes) {
  runner::TensorDesc d = {static_cast<uint8_t>(dtype), static_cast<uint8_t>(sizes.size()), nbytes,
                          {}};
  for (size_t i = 0; i < sizes.size(); ++i) d.sizes[i] = sizes[i];
  return d;
}

const uint8_t kZeros[64] = {};

// As the link's SET_INPUT: checked against the program, then written whole.
rt::Error set_input(runner::Session& session, size_t i, const runner::TensorDesc& d) {
  RT_TRY(session.check_input(i, d));
  return session.write_input(i, 0, kZeros, d.nbytes);
}

}  // namespace
TEST(crc32_matches_zlib) {
  const char* text = "123456789";
  CHECK_EQ(runner::crc32(reinterpret_cast<const uint8_t*>(text), 9), 0xCBF43926u);
  uint8_t data[1000];
  for (int i = 0; i < 1000; ++i) data[i] = static_cast<uint8_t>(i * 7);
  // Expected values from Python's zlib.crc32.
  CHECK_EQ(runner::crc32(data, sizeof(data)), 0x114ad5ffu);
  CHECK_EQ(runner::crc32(data + 10, 500, runner::crc32(data, 10)), 0x8cd72e77u);
}

TEST(open_program_blob_accepts_a_good_blob) {
  uint8_t payload[40];
  for (int i = 0; i < 40; ++i) payload[i] = static_cast<uint8_t>(i);
  Bytes b = blob(payload, sizeof(payload));
  rt::ConstBytes out;
  CHECK_OK(runner::open_program_blob(b.data(), b.size(), &out));
  CHECK_EQ(out.size, 40);
  CHECK(out.data == b.data() + 32);
}

TEST(open_program_blob_rejects_each_bad_field) {
  uint8_t payload[40] = {1, 2, 3};
  rt::ConstBytes out;
  {
    Bytes b = blob(payload, sizeof(payload));
    put_u32(b.data(), 0x494b4453);  // "SDKI"
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size(), &out), InvalidProgram);
    CHECK_REASON("was it preloaded");
  }
  {
    Bytes b = blob(payload, sizeof(payload));
    put_u32(b.data() + 4, 2);
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size(), &out), InvalidProgram);
    CHECK_REASON("version 2");
  }
  {
    Bytes b = blob(payload, sizeof(payload));
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size() - 1, &out), InvalidProgram);
    CHECK_REASON("does not fit");
    put_u32(b.data() + 8, 0xFFFFFFFFu);
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size(), &out), InvalidProgram);
  }
  {
    Bytes b = blob(payload, sizeof(payload));
    b.data()[20] = 1;
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size(), &out), InvalidProgram);
    CHECK_REASON("reserved");
  }
  {
    Bytes b = blob(payload, sizeof(payload));
    b.data()[32 + 39] ^= 0x10;
    CHECK_ERROR(runner::open_program_blob(b.data(), b.size(), &out), InvalidProgram);
    CHECK_REASON("CRC");
  }
  CHECK_ERROR(runner::open_program_blob(payload, 16, &out), InvalidProgram);
}

TEST(set_input_takes_a_matching_input) {
  Bytes program = add_program();
  Loaded loaded(program);
  CHECK_OK(set_input(loaded.session, 0, desc(ScalarType::Float, {2, 3}, 24)));
  CHECK_OK(set_input(loaded.session, 1, desc(ScalarType::Float, {2, 3}, 24)));
  runner::RunTiming timing;
  CHECK_OK(loaded.session.execute(1, &timing));
}

TEST(set_input_refuses_wrong_dtype_shape_and_size) {
  Bytes program = add_program();
  Loaded loaded(program);
  CHECK_ERROR(set_input(loaded.session, 1, desc(ScalarType::Int, {2, 3}, 24)),
              InputMismatch);
  CHECK_REASON("input 1: dtype Int (3) given, the program takes Float");
  CHECK_ERROR(set_input(loaded.session, 0, desc(ScalarType::Float, {3, 2}, 24)),
              InputMismatch);
  CHECK_REASON("input 0: shape [3,2] given, the program takes [2,3]");
  CHECK_ERROR(set_input(loaded.session, 0, desc(ScalarType::Float, {2, 3}, 20)),
              InputMismatch);
  CHECK_REASON("20 bytes given");
}

TEST(the_session_rechecks_the_outputs_after_execute) {
  // A kernel (or delegate) that turns its output into something else: nothing may read
  // through the output as if it still were a tensor.
  test::ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {2, 3}, 0);
  p.kernel_call(p.op("test::retag", "default"), {x});
  p.set_inputs({x});
  p.set_outputs({x});
  p.set_buffer_sizes({0, 32});
  Bytes program = p.finish();
  Loaded loaded(program);
  CHECK_OK(set_input(loaded.session, 0, desc(ScalarType::Float, {2, 3}, 24)));
  runner::RunTiming timing;
  CHECK_OK(loaded.session.execute(1, &timing));
  const rt::Tensor* tensor = nullptr;
  CHECK_ERROR(loaded.session.output_tensor(0, &tensor), Internal);
  CHECK_REASON("output 0 is Int after execute(), no longer a tensor");
  CHECK(!loaded.session.outputs_are_tensors());
}

TEST(shapes_print_whole) {
  const int32_t sizes[8] = {2147483647, -1, 0, 1, 2, 3, 4, 5};
  CHECK(strcmp(runner::shape_text(sizes, 8).text, "[2147483647,-1,0,1,2,3,4,5]") == 0);
  CHECK(strcmp(runner::shape_text(sizes, 0).text, "[]") == 0);
}
