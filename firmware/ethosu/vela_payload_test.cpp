// The Vela payload parser: a good stream, a real one from an export, and every refusal.
#include "vela_payload.h"

#include <string.h>

#include <string>
#include <vector>

#include "test_harness.h"
#include "test_support.h"
#include "vela_payload_builder.h"

using test::VelaBuilder;

namespace {

alignas(16) uint8_t g_buffer[1 << 16];
ethosu::VelaPayload g_view;

rt::Error parse(const std::vector<uint8_t>& bytes) {
  memcpy(g_buffer, bytes.data(), bytes.size());
  return ethosu::parse_vela_payload(g_buffer, bytes.size(), &g_view);
}

rt::Error parse(const VelaBuilder& b) { return parse(b.bytes()); }

void set32(std::vector<uint8_t>& v, size_t at, uint32_t w) { memcpy(&v[at], &w, 4); }

}  // namespace

TEST(vela_standard_payload_parses_into_a_view) {
  std::vector<uint8_t> bytes = VelaBuilder::standard().bytes();
  CHECK_OK(parse(bytes));
  CHECK_EQ(g_view.npu_config, 0x1807);
  CHECK_EQ(g_view.npu_id, 0x10066001);
  CHECK_EQ(g_view.scratch_size, 32);
  CHECK_EQ(g_view.command_stream_size, 12);
  CHECK_EQ(g_view.command_stream - g_buffer, 96);  // after COP1, config, 3 NOPs, the action
  CHECK_EQ(g_view.weights_size, 32);
  CHECK(g_view.weights[0] == 0xA5);
  CHECK_EQ(g_view.inputs.count, 1);
  ethosu::IoRecord in = ethosu::io_record(g_view.inputs, 0);
  CHECK_EQ(in.shape[5], 16);
  CHECK_EQ(in.shape[0], 1);
  CHECK_EQ(in.nbytes, 16);
  ethosu::IoRecord out = ethosu::io_record(g_view.outputs, 0);
  CHECK_EQ(out.offset, 16);
  CHECK(g_view.cmd_data >= g_buffer && g_view.cmd_data < g_buffer + bytes.size());  // no copy
}

TEST(vela_payload_of_a_real_export_parses) {
  test::Bytes pte = test::fixture_program("delegate.pte");
  if (pte.size() == 0) {
    printf("  (no --programs: skipped)\n");
    return;
  }
  const uint8_t* at = nullptr;
  for (size_t i = 0; i + 16 <= pte.size() && at == nullptr; i += 16) {
    if (memcmp(pte.data() + i, "vela_bin_stream", 16) == 0) at = pte.data() + i;
  }
  CHECK(at != nullptr);
  // The payload ends with its vela_end_stream header; find it by walking the blocks.
  size_t pos = 0;
  size_t left = pte.size() - static_cast<size_t>(at - pte.data());
  while (pos + 32 <= left && memcmp(at + pos, "vela_end_stream", 16) != 0) {
    uint32_t size;
    memcpy(&size, at + pos + 16, 4);
    pos += 32 + ((size + 15) & ~15u);
  }
  CHECK(pos + 32 <= left);
  CHECK_OK(ethosu::parse_vela_payload(at, pos + 32, &g_view));
  CHECK_EQ(g_view.npu_config, 0x1807);
  CHECK_EQ(ethosu::io_record(g_view.inputs, 0).elem_size, 1);
  CHECK(g_view.scratch_size >= ethosu::io_record(g_view.outputs, 0).nbytes);
}

TEST(vela_block_headers_are_checked) {
  std::vector<uint8_t> good = VelaBuilder::standard().bytes();
  std::vector<uint8_t> v = good;
  v.resize(good.size() - 16);
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("truncated block header at offset");

  v = good;
  memset(&v[32], 'x', 16);  // cmd_data's name, no NUL
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block at offset 32: name is not NUL-terminated within 16 bytes");

  v = good;
  v[33] = 0x01;
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block at offset 32: name byte 1 is not printable");

  v = good;
  v[32 + 12] = 'z';  // after "cmd_data\0"
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block at offset 32: name is not NUL-padded");

  v = good;
  memset(&v[32], 0, 16);
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("name is empty");

  v = good;
  v[32 + 25] = 1;
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block 'cmd_data' at offset 32: reserved header byte 25 is not zero");
}

TEST(vela_block_sizes_alignment_and_padding_are_checked) {
  std::vector<uint8_t> good = VelaBuilder::standard().bytes();
  std::vector<uint8_t> v = good;
  set32(v, 32 + 16, 0x7FFFFFF0);  // cmd_data's size
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block 'cmd_data' at offset 32: 2147483632 bytes");

  VelaBuilder b = VelaBuilder::standard();
  b.find("weight_data")->data.resize(20, 0xA5);  // padded with 12 zeros
  v = b.bytes();
  CHECK_OK(parse(v));
  size_t weights_at = static_cast<size_t>(g_view.weights - g_buffer);
  v[weights_at + 25] = 7;
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("block 'weight_data'");
  CHECK_REASON("padding byte at offset");

  // A size whose padding would pass the end: the last block claims 1 byte more.
  v = good;
  set32(v, good.size() - 32 + 16, 1);
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("vela_end_stream");
}

TEST(vela_stream_start_and_end_are_checked) {
  VelaBuilder b = VelaBuilder::standard();
  b.blocks.erase(b.blocks.begin());
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'cmd_data' at offset 0: the stream must start with vela_bin_stream");

  b = VelaBuilder::standard();
  b.blocks[0].data = {1};
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'vela_bin_stream' at offset 0: 1 bytes, must be empty");

  b = VelaBuilder::standard();
  b.blocks.back().data = {1};
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'vela_end_stream'");
  CHECK_REASON("must be empty");

  b = VelaBuilder::standard();
  b.blocks.pop_back();
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("no vela_end_stream");

  std::vector<uint8_t> v = VelaBuilder::standard().bytes();
  v.resize(v.size() + 32, 0);  // something after the end
  CHECK_ERROR(parse(v), InvalidProgram);
  CHECK_REASON("vela_end_stream at offset");
  CHECK_REASON("ends at");

  CHECK_ERROR(ethosu::parse_vela_payload(nullptr, 0, &g_view), InvalidProgram);
  CHECK_REASON("empty");
}

TEST(vela_blocks_appear_exactly_once_and_unknown_or_external_ones_are_refused) {
  const char* required[] = {"cmd_data", "weight_data", "scratch_size", "inputs", "outputs"};
  for (const char* name : required) {
    VelaBuilder b = VelaBuilder::standard();
    for (size_t i = 0; i < b.blocks.size(); ++i) {
      if (b.blocks[i].name == name) b.blocks.erase(b.blocks.begin() + static_cast<long>(i));
    }
    CHECK_ERROR(parse(b), InvalidProgram);
    CHECK_REASON((std::string("no '") + name + "' block").c_str());
  }
  VelaBuilder b = VelaBuilder::standard();
  b.blocks.insert(b.blocks.begin() + 3, *b.find("weight_data"));
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'weight_data'");
  CHECK_REASON("appears again (first at offset");

  b = VelaBuilder::standard();
  b.blocks.insert(b.blocks.begin() + 1, VelaBuilder::Block{"future_block", {1, 2, 3}});
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'future_block' at offset 32: unknown block");

  b = VelaBuilder::standard();
  b.find("weight_data")->external = 1;
  CHECK_ERROR(parse(b), NotSupported);
  CHECK_REASON("block 'weight_data'");
  CHECK_REASON("external data (named data in a .ptd) is not supported");
}

TEST(vela_scratch_size_and_records_are_checked) {
  VelaBuilder b = VelaBuilder::standard();
  b.find("scratch_size")->data.push_back(0);
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'scratch_size' at offset");
  CHECK_REASON("5 bytes, not one u32");

  struct Case {
    std::vector<test::VelaRecord> records;
    const char* reason;
  };
  const Case cases[] = {
      {{}, "0 records (1..32 supported)"},
      {{{{-1, 16}, 1, 0}}, "record 0: shape[4] is -1"},
      {{{{16}, 3, 0}}, "record 0: element size 3 (1, 2 or 4)"},
      {{{{16}, 1, -16}}, "record 0: scratch offset -16"},
      {{{{16}, 2, 8}}, "record 0: 32 bytes at scratch offset 8 pass the scratch size 32"},
      {{{{16}, 1, 0}, {{65536, 65536, 65536}, 4, 0}},
       "record 1: shape and element size make 2^31 bytes or more"},
  };
  for (const Case& c : cases) {
    b = VelaBuilder::standard();
    b.find("outputs")->data = VelaBuilder::records(c.records);
    CHECK_ERROR(parse(b), InvalidProgram);
    CHECK_REASON("block 'outputs' at offset");
    CHECK_REASON(c.reason);
  }
  b = VelaBuilder::standard();
  b.find("inputs")->data.resize(39);
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'inputs' at offset");
  CHECK_REASON("39 bytes for 1 records (expected 40)");

  b = VelaBuilder::standard();
  b.find("inputs")->data.resize(2);
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("shorter than its count");

  b = VelaBuilder::standard();
  std::vector<test::VelaRecord> many(33, test::VelaRecord{{1}, 1, 0});
  b.find("inputs")->data = VelaBuilder::records(many);
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("33 records (0..32 supported)");

  b = VelaBuilder::standard();
  b.find("inputs")->data = VelaBuilder::records({});
  set32(b.find("inputs")->data, 0, 0xFFFFFFFF);  // a count of -1
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'inputs' at offset");
  CHECK_REASON("-1 records (0..32 supported)");
}

// All of a delegate's data can be constant (an attention's bool mask): Vela writes an inputs
// block with a count of 0. Valid, and the view says so; outputs still need one record.
TEST(vela_delegate_without_inputs_parses) {
  VelaBuilder b = VelaBuilder::standard();
  b.find("inputs")->data = VelaBuilder::records({});
  CHECK_OK(parse(b));
  CHECK_EQ(g_view.inputs.count, 0);
  CHECK_EQ(g_view.outputs.count, 1);
  CHECK_EQ(ethosu::io_record(g_view.outputs, 0).offset, 16);

  b.find("inputs")->data.push_back(0);  // a count of 0 and a stray byte: still refused
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("5 bytes for 0 records (expected 4)");

  b = VelaBuilder::standard();
  b.find("outputs")->data = VelaBuilder::records({});
  CHECK_ERROR(parse(b), InvalidProgram);
  CHECK_REASON("block 'outputs' at offset");
  CHECK_REASON("0 records (1..32 supported)");
}

TEST(vela_cmd_data_actions_are_checked) {
  const uint32_t cfg = 0x1807;
  const uint32_t id = 0x10066001;
  const std::vector<uint32_t> stream = {0x00010002, 0xFFFF0000};
  struct Case {
    std::vector<uint8_t> data;
    const char* reason;
  };
  std::vector<uint8_t> no_cop = VelaBuilder::cmd_data(cfg, id, 3, stream);
  no_cop[0] = 'X';
  std::vector<uint8_t> ragged = VelaBuilder::cmd_data(cfg, id, 3, stream);
  ragged.push_back(0);
  std::vector<uint8_t> unknown = VelaBuilder::cmd_data(cfg, id, 3, stream);
  set32(unknown, 16, 3);  // the first NOP becomes action 3
  std::vector<uint8_t> short_config(unknown.begin(), unknown.begin() + 12);
  set32(short_config, 0, 0x31504F43);
  set32(short_config, 4, 0x00100001);
  std::vector<uint8_t> two_configs = VelaBuilder::cmd_data(cfg, id, 3, stream);
  set32(two_configs, 16, 0x00100001);  // NOP, NOP, NOP -> OPTIMIZER_CONFIG(5, 5)
  std::vector<uint8_t> long_stream = VelaBuilder::cmd_data(cfg, id, 3, stream);
  set32(long_stream, 28, 2u | (3u << 16));  // 3 words, 2 present
  std::vector<uint8_t> misaligned = VelaBuilder::cmd_data(cfg, id, 2, stream);
  std::vector<uint8_t> no_stop = VelaBuilder::cmd_data(cfg, id, 3, {0x00010002, 0x12345678});
  std::vector<uint8_t> empty_stream = VelaBuilder::cmd_data(cfg, id, 3, {});
  std::vector<uint8_t> config_only(no_cop.begin(), no_cop.begin() + 16);
  set32(config_only, 0, 0x31504F43);
  std::vector<uint8_t> two_streams = VelaBuilder::cmd_data(cfg, id, 3, stream);
  {
    std::vector<uint8_t> again = VelaBuilder::cmd_data(cfg, id, 3, stream);
    two_streams.insert(two_streams.end(), again.begin() + 28, again.end());
  }
  std::vector<uint8_t> stream_first;
  VelaBuilder::put32(stream_first, 0x31504F43);
  VelaBuilder::put32(stream_first, 5);
  VelaBuilder::put32(stream_first, 5);
  VelaBuilder::put32(stream_first, 5);
  VelaBuilder::put32(stream_first, 2u | (1u << 16));
  VelaBuilder::put32(stream_first, 0xFFFF0000);
  const Case cases[] = {
      {no_cop, "block 'cmd_data' at offset 32: does not start with COP1"},
      {ragged, "block 'cmd_data' at offset 32: 41 bytes, not whole words"},
      {unknown, "cmd_data at offset 80: driver action 3 (word 0x00000003) not supported"},
      {short_config, "cmd_data at offset 68: OPTIMIZER_CONFIG lacks its cfg and id words"},
      {two_configs, "cmd_data at offset 80: a second OPTIMIZER_CONFIG"},
      {long_stream, "cmd_data at offset 92: COMMAND_STREAM of 3 words, 8 bytes left"},
      {misaligned, "the command stream starts at offset 92, not 16-byte aligned"},
      {no_stop, "the command stream ends with 0x12345678, not NPU_OP_STOP"},
      {empty_stream, "COMMAND_STREAM of 0 words"},
      {config_only, "block 'cmd_data' at offset 32: no COMMAND_STREAM"},
      {two_streams, "a second COMMAND_STREAM"},
      {stream_first, "COMMAND_STREAM before OPTIMIZER_CONFIG"},
  };
  for (const Case& c : cases) {
    VelaBuilder b = VelaBuilder::standard();
    b.find("cmd_data")->data = c.data;
    CHECK_ERROR(parse(b), InvalidProgram);
    CHECK_REASON(c.reason);
  }
  // A stream longer than 16 bits of words keeps its high byte in bits 15:8.
  std::vector<uint32_t> big(0x10001, 0);
  big.back() = 0xFFFF0000;
  VelaBuilder b = VelaBuilder::standard();
  b.find("cmd_data")->data = VelaBuilder::cmd_data(cfg, id, 3, big);
  std::vector<uint8_t> bytes = b.bytes();
  alignas(16) static uint8_t large[1 << 19];
  CHECK(bytes.size() <= sizeof(large));
  memcpy(large, bytes.data(), bytes.size());
  CHECK_OK(ethosu::parse_vela_payload(large, bytes.size(), &g_view));
  CHECK_EQ(g_view.command_stream_size, 0x10001 * 4);
}

TEST(vela_elem_size_names) {
  CHECK(strcmp(ethosu::elem_size_dtype(1), "Char") == 0);
  CHECK(strcmp(ethosu::elem_size_dtype(2), "Short") == 0);
  CHECK(strcmp(ethosu::elem_size_dtype(4), "Int") == 0);
}
