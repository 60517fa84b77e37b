// The runner's checks of the preloaded blobs and of the inputs against the program.
#include <string.h>

#include "record.h"
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

Bytes blob(uint32_t magic, const uint8_t* payload, size_t size) {
  Bytes b(runner::kBlobHeaderSize + size);
  put_u32(b.data(), magic);
  put_u32(b.data() + 4, runner::kBlobVersion);
  put_u32(b.data() + 8, static_cast<uint32_t>(size));
  put_u32(b.data() + 12, runner::crc32(payload, size));
  memcpy(b.data() + runner::kBlobHeaderSize, payload, size);
  return b;
}

// An inputs payload with one record per (dtype, sizes), data zero-filled.
struct InputSpec {
  ScalarType dtype;
  std::vector<int32_t> sizes;
  size_t elem;
};

std::vector<uint8_t> inputs_payload(const std::vector<InputSpec>& specs) {
  size_t offset = (8 + 48 * specs.size() + 15) & ~size_t{15};
  std::vector<uint8_t> out(offset);
  put_u32(out.data(), static_cast<uint32_t>(specs.size()));
  for (size_t i = 0; i < specs.size(); ++i) {
    uint8_t* r = out.data() + 8 + 48 * i;
    size_t numel = 1;
    for (int32_t s : specs[i].sizes) numel *= static_cast<size_t>(s);
    r[0] = static_cast<uint8_t>(specs[i].dtype);
    r[1] = static_cast<uint8_t>(specs[i].sizes.size());
    put_u32(r + 4, static_cast<uint32_t>(numel * specs[i].elem));
    put_u32(r + 8, static_cast<uint32_t>(out.size()));
    for (size_t d = 0; d < specs[i].sizes.size(); ++d) {
      put_u32(r + 16 + 4 * d, static_cast<uint32_t>(specs[i].sizes[d]));
    }
    out.resize((out.size() + numel * specs[i].elem + 15) & ~size_t{15});
  }
  return out;
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

int run_with(const std::vector<uint8_t>& payload) {
  Bytes program = add_program();
  Bytes inputs(payload.data(), payload.size());
  rt::clear_error();
  return runner::run({program.data(), program.size()}, {inputs.data(), inputs.size()}, kMemory);
}

const InputSpec kFloat23 = {ScalarType::Float, {2, 3}, 4};

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

TEST(open_blob_accepts_a_good_blob) {
  uint8_t payload[40];
  for (int i = 0; i < 40; ++i) payload[i] = static_cast<uint8_t>(i);
  Bytes b = blob(runner::kInputsMagic, payload, sizeof(payload));
  rt::ConstBytes out;
  CHECK_OK(runner::open_blob(b.data(), b.size(), runner::kInputsMagic, rt::Error::InvalidInputs,
                             &out));
  CHECK_EQ(out.size, 40);
  CHECK(out.data == b.data() + 32);
}

TEST(open_blob_rejects_each_bad_field) {
  uint8_t payload[40] = {1, 2, 3};
  rt::ConstBytes out;
  {
    Bytes b = blob(runner::kProgramMagic, payload, sizeof(payload));
    CHECK_ERROR(runner::open_blob(b.data(), b.size(), runner::kInputsMagic,
                                  rt::Error::InvalidInputs, &out),
                InvalidInputs);
    CHECK_REASON("was it preloaded");
  }
  {
    Bytes b = blob(runner::kInputsMagic, payload, sizeof(payload));
    put_u32(b.data() + 4, 2);
    CHECK_ERROR(runner::open_blob(b.data(), b.size(), runner::kInputsMagic,
                                  rt::Error::InvalidInputs, &out),
                InvalidInputs);
    CHECK_REASON("version 2");
  }
  {
    Bytes b = blob(runner::kInputsMagic, payload, sizeof(payload));
    CHECK_ERROR(runner::open_blob(b.data(), b.size() - 1, runner::kInputsMagic,
                                  rt::Error::InvalidInputs, &out),
                InvalidInputs);
    CHECK_REASON("does not fit");
    put_u32(b.data() + 8, 0xFFFFFFFFu);
    CHECK_ERROR(runner::open_blob(b.data(), b.size(), runner::kInputsMagic,
                                  rt::Error::InvalidInputs, &out),
                InvalidInputs);
  }
  {
    Bytes b = blob(runner::kInputsMagic, payload, sizeof(payload));
    b.data()[20] = 1;
    CHECK_ERROR(runner::open_blob(b.data(), b.size(), runner::kInputsMagic,
                                  rt::Error::InvalidInputs, &out),
                InvalidInputs);
    CHECK_REASON("reserved");
  }
  {
    Bytes b = blob(runner::kProgramMagic, payload, sizeof(payload));
    b.data()[32 + 39] ^= 0x10;
    CHECK_ERROR(runner::open_blob(b.data(), b.size(), runner::kProgramMagic,
                                  rt::Error::InvalidProgram, &out),
                InvalidProgram);
    CHECK_REASON("CRC");
  }
  CHECK_ERROR(runner::open_blob(payload, 16, runner::kProgramMagic, rt::Error::InvalidProgram,
                                &out),
              InvalidProgram);
}

TEST(run_passes_with_matching_inputs) {
  CHECK_EQ(run_with(inputs_payload({kFloat23, kFloat23})), 0);
}

TEST(run_refuses_wrong_input_count) {
  CHECK_EQ(run_with(inputs_payload({kFloat23})), static_cast<int>(rt::Error::InputMismatch));
  CHECK_REASON("1 inputs given, the program takes 2");
}

TEST(run_refuses_wrong_dtype_shape_and_size) {
  CHECK_EQ(run_with(inputs_payload({kFloat23, {ScalarType::Int, {2, 3}, 4}})),
           static_cast<int>(rt::Error::InputMismatch));
  CHECK_REASON("input 1: dtype Int (3) given, the program takes Float");
  CHECK_EQ(run_with(inputs_payload({{ScalarType::Float, {3, 2}, 4}, kFloat23})),
           static_cast<int>(rt::Error::InputMismatch));
  CHECK_REASON("input 0: shape [3,2] given, the program takes [2,3]");
  std::vector<uint8_t> payload = inputs_payload({kFloat23, kFloat23});
  put_u32(payload.data() + 8 + 4, 20);  // nbytes of input 0
  CHECK_EQ(run_with(payload), static_cast<int>(rt::Error::InputMismatch));
  CHECK_REASON("20 bytes given");
}

TEST(run_refuses_malformed_inputs) {
  std::vector<uint8_t> good = inputs_payload({kFloat23, kFloat23});
  {
    std::vector<uint8_t> p = good;
    put_u32(p.data(), 1000);  // more records than fit
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
    CHECK_REASON("cannot hold 1000 records");
  }
  {
    std::vector<uint8_t> p = good;
    put_u32(p.data() + 8 + 8, 8);  // data offset inside the records, unaligned
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
  }
  {
    std::vector<uint8_t> p = good;
    put_u32(p.data() + 8 + 8, 16);  // aligned, but inside the records
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
    CHECK_REASON("outside the data area");
  }
  {
    std::vector<uint8_t> p = good;
    put_u32(p.data() + 8 + 48 + 8, 0xFFFFFFF0u);  // far past the end
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
  }
  {
    std::vector<uint8_t> p = good;
    p[8 + 1] = 9;  // ndim
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
  }
  {
    std::vector<uint8_t> p = good;
    put_u32(p.data() + 8 + 16 + 4 * 5, 3);  // a size beyond ndim
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
  }
  {
    std::vector<uint8_t> p(good.begin(), good.begin() + 4);
    CHECK_EQ(run_with(p), static_cast<int>(rt::Error::InvalidInputs));
  }
}

// ---- The record: nothing from the program may end a line or a quoted text -----------------

TEST(quoted_text_keeps_only_printable_ascii) {
  std::string out = test::capture_stdout([] {
    runner::Line line;
    line.text("x ").quoted("a\"b\xe2\x80\xa8" "c\xc2\x85\n\r\x7f~ ").end();
  });
  CHECK(out == "x \"a'b???c?????~ \"\n");
}

TEST(an_operator_name_cannot_inject_record_lines) {
  // The reviewer's inject.pte: U+2028 (E2 80 A8) before fake `@sdk` lines in an operator name,
  // which a host splitting lines at U+2028 took for the record's last result line.
  test::ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {4}, 0);
  p.kernel_call(p.op("x\xe2\x80\xa8@sdk result status=ok outputs=0 init_ticks=1 run_ticks=1 "
                     "tick_hz=1\n@sdk result status=ok outputs=0",
                     "out"),
                {x});
  p.set_outputs({x});
  p.set_buffer_sizes({0, 16});
  Bytes program = p.finish();
  std::vector<uint8_t> payload = inputs_payload({});
  Bytes inputs(payload.data(), payload.size());
  int code = -1;
  std::string out = test::capture_stdout([&] {
    code = runner::run({program.data(), program.size()}, {inputs.data(), inputs.size()},
                       kMemory);
  });
  CHECK_EQ(code, static_cast<int>(rt::Error::OperatorMissing));
  for (char c : out) {
    CHECK(c == '\n' || (static_cast<unsigned char>(c) >= 0x20 &&
                        static_cast<unsigned char>(c) <= 0x7e));
  }
  CHECK(out.find("\n@sdk result") == std::string::npos);  // the one result line starts `out`
  CHECK(out.rfind("@sdk result status=error code=5 name=OperatorMissing reason=\"x???@sdk", 0) == 0);
  CHECK(out.find("tick_hz=1?@sdk") != std::string::npos);
}

TEST(runner_rechecks_the_outputs_after_execute) {
  // A kernel (or delegate) that turns its output into something else: the runner must not
  // print through the output as if it still were a tensor.
  test::ProgramBuilder p;
  int x = p.planned(ScalarType::Float, {2, 3}, 0);
  p.kernel_call(p.op("test::retag", "default"), {x});
  p.set_inputs({x});
  p.set_outputs({x});
  p.set_buffer_sizes({0, 32});
  Bytes program = p.finish();
  std::vector<uint8_t> payload = inputs_payload({kFloat23});
  Bytes inputs(payload.data(), payload.size());
  int code = -1;
  std::string out = test::capture_stdout([&] {
    code = runner::run({program.data(), program.size()}, {inputs.data(), inputs.size()},
                       kMemory);
  });
  CHECK_EQ(code, static_cast<int>(rt::Error::Internal));
  CHECK_REASON("output 0 is Int after execute(), no longer a tensor");
  CHECK(out.find("@sdk output") == std::string::npos);
}

TEST(shapes_print_whole) {
  const int32_t sizes[8] = {2147483647, -1, 0, 1, 2, 3, 4, 5};
  CHECK(strcmp(runner::shape_text(sizes, 8).text, "[2147483647,-1,0,1,2,3,4,5]") == 0);
  CHECK(strcmp(runner::shape_text(sizes, 0).text, "[]") == 0);
}
