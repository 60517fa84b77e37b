// Host tests: Vela payloads block by block, the way ExecuTorch's Arm backend lays them out
// (test-only; header-only so each test binary takes what it needs).
#pragma once

#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

namespace test {

struct VelaRecord {
  std::vector<int32_t> shape;  // padded to 6 with leading 1s
  int32_t elem_size;
  int32_t offset;
  int32_t region = 1;
};

struct VelaBuilder {
  struct Block {
    std::string name;
    std::vector<uint8_t> data;
    uint8_t external = 0;
  };
  std::vector<Block> blocks;

  static void put32(std::vector<uint8_t>& v, uint32_t w) {
    uint8_t b[4];
    memcpy(b, &w, 4);
    v.insert(v.end(), b, b + 4);
  }

  // COP1, OPTIMIZER_CONFIG(cfg, id), `nops` NOPs, COMMAND_STREAM of `stream` words.
  static std::vector<uint8_t> cmd_data(uint32_t cfg, uint32_t id, int nops,
                                       const std::vector<uint32_t>& stream) {
    std::vector<uint8_t> v;
    put32(v, 0x31504F43);
    put32(v, 0x00100001);
    put32(v, cfg);
    put32(v, id);
    for (int i = 0; i < nops; ++i) put32(v, 5);
    uint32_t n = static_cast<uint32_t>(stream.size());
    put32(v, 2u | ((n >> 16) & 0xFF) << 8 | (n & 0xFFFF) << 16);
    for (uint32_t w : stream) put32(v, w);
    return v;
  }

  static std::vector<uint8_t> records(const std::vector<VelaRecord>& rs) {
    std::vector<uint8_t> v;
    put32(v, static_cast<uint32_t>(rs.size()));
    for (const VelaRecord& r : rs) {
      std::vector<int32_t> shape(6 - r.shape.size(), 1);
      shape.insert(shape.end(), r.shape.begin(), r.shape.end());
      for (int32_t s : shape) put32(v, static_cast<uint32_t>(s));
      put32(v, static_cast<uint32_t>(r.elem_size));
      put32(v, static_cast<uint32_t>(r.offset));
      put32(v, static_cast<uint32_t>(r.region));
    }
    return v;
  }

  // One int8 input [16] at offset 0 and one int8 output [16] at offset 16, scratch 32,
  // compiled for a U55-128.
  static VelaBuilder standard(uint32_t cfg = 0x00001807, uint32_t id = 0x10066001) {
    VelaBuilder b;
    std::vector<uint8_t> scratch;
    put32(scratch, 32);
    b.blocks = {
        {"vela_bin_stream", {}},
        {"cmd_data", cmd_data(cfg, id, 3, {0x00010002, 0x12345678, 0xFFFF0000})},
        {"weight_data", std::vector<uint8_t>(32, 0xA5)},
        {"scratch_size", scratch},
        {"inputs", records({{{16}, 1, 0}})},
        {"outputs", records({{{16}, 1, 16}})},
        {"vela_end_stream", {}},
    };
    return b;
  }

  Block* find(const std::string& name) {
    for (Block& b : blocks) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> v;
    for (const Block& b : blocks) {
      uint8_t header[32] = {};
      memcpy(header, b.name.data(), b.name.size() < 16 ? b.name.size() : 16);
      uint32_t size = static_cast<uint32_t>(b.data.size());
      memcpy(header + 16, &size, 4);
      header[20] = b.external;
      v.insert(v.end(), header, header + 32);
      v.insert(v.end(), b.data.begin(), b.data.end());
      v.resize((v.size() + 15) & ~size_t{15}, 0);
    }
    return v;
  }
};

}  // namespace test
