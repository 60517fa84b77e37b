// Fuzzing the host link: arbitrary byte streams into the frame decoder and the link server,
// with the firmware's real kernels behind it. Nothing from the wire may crash the firmware.
//
// Built with libFuzzer when clang is there (-DSDK_LIBFUZZER), otherwise with the plain
// mutation driver (fuzz_driver.h):
//   fuzz_link [--iterations N] [--seed S] [--write-seeds DIR] [SEED.pte...]
// An input is either a raw byte stream (first byte even) or a script (first byte odd) of
// records `u8 kind, u8 flags, u16 length, payload` that the harness frames with a valid CRC,
// so that mutations reach the handlers and not only the CRC check. flags: bit 0 wrong session,
// bit 1 damaged CRC, bit 2 response flag set, bit 3 same seq as the record before
// (a retransmission). The driver's seeds are scripts that load each SEED.pte, set its inputs,
// run it and read its outputs; each iteration mutates a seed's script or its wire bytes.
// --write-seeds DIR writes those scripts: a libFuzzer corpus cut from real programs.
// The Ethos-U backend runs on the server's virtual U55, so a delegated seed's LOAD_END and RUN
// open register exchanges: the scripts answer them (NPU_HASH, NPU_READ, NPU_WRITE, NPU_DONE, a
// retransmitted RUN and NPU_DONE), which fuzzes the server's nested exchange loop. The
// transport never waits, so an exchange whose requests ran out fails at once (the link
// "closed").
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "backend.h"
#include "frame.h"
#include "fuzz_driver.h"
#include "npu_absent.h"
#include "console.h"
#include "server.h"
#include "session.h"
#include "sha256.h"
#include "test_support.h"

namespace {

alignas(16) uint8_t g_metadata[1 << 18];
alignas(16) uint8_t g_planned[1 << 20];
alignas(16) uint8_t g_scratch[1 << 12];
alignas(16) uint8_t g_slot[1 << 20];
alignas(16) uint8_t g_stash[1 << 16];

// Swallows what the server sends; a reset returns (the server boots again).
class NullTransport final : public hostlink::Transport {
 public:
  size_t read(uint8_t*, size_t) override { return 0; }
  void write(const uint8_t*, size_t size) override { written += size; }
  bool wait() override { return false; }
  void flush() override {}
  void reset() override {}
  uint32_t rx_overflows() override { return 0; }
  size_t written = 0;
};

NullTransport g_transport;

hostlink::Server& server() {
  static const hostlink::ServerConfig config = {
      {{g_metadata, sizeof(g_metadata)}, {g_planned, sizeof(g_planned)},
       {g_scratch, sizeof(g_scratch)}},
      {g_slot, sizeof(g_slot)},
      {g_stash, sizeof(g_stash)},
      {nullptr, 0},
      "fuzz",
      "fuzz",
      "none",
      0,
      0,
  };
  static hostlink::Server instance(g_transport, config);
  static bool registered = false;
  if (!registered) {
    registered = true;
    ethosu::NpuPlatform npu =
        instance.virtual_u55_platform(test::absent_npu_platform(), ethosu::handle_npu_irq);
    if (ethosu::register_backend(npu) != rt::Error::Ok) {
      fprintf(stderr, "fuzz_link: %s\n", rt::last_error_reason());
      abort();
    }
  }
  return instance;
}

uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Frames the script's records into a wire stream.
std::vector<uint8_t> script_to_wire(const uint8_t* data, size_t size) {
  std::vector<uint8_t> wire;
  uint8_t body[hostlink::kMaxBody];
  uint8_t encoded[hostlink::kMaxWire];
  uint32_t session = 0;
  uint16_t seq = 0;
  size_t at = 1;  // after the mode byte
  while (at + 4 <= size) {
    uint8_t kind = data[at];
    uint8_t flags = data[at + 1];
    size_t length = static_cast<size_t>(data[at + 2] | (data[at + 3] << 8));
    at += 4;
    length = length < size - at ? length : size - at;
    length = length < hostlink::kMaxPayload ? length : hostlink::kMaxPayload;
    if (kind == hostlink::kConnect && length == 4) {
      session = get_u32(data + at);
    }
    if ((flags & 8) == 0) {
      seq = static_cast<uint16_t>(seq == 0xFFFF ? 1 : seq + 1);
    }
    uint32_t frame_session = (flags & 1) != 0 ? session ^ 0x5A5A5A5Au : session;
    uint8_t frame_flags = (flags & 4) != 0 ? hostlink::kFlagResponse : 0;
    size_t n = hostlink::build_body(kind, seq, frame_session, frame_flags, data + at, length,
                                    body, sizeof(body));
    // A RUN of 2^32 iterations is a valid request that takes for ever: keep runs short.
    if (kind == hostlink::kRun && length == 4 && n > 0) {
      body[hostlink::kHeaderSize + 1] = body[hostlink::kHeaderSize + 2] = 0;
      body[hostlink::kHeaderSize + 3] = 0;
      body[hostlink::kHeaderSize] %= 5;
      n = hostlink::build_body(kind, seq, frame_session, frame_flags, body + hostlink::kHeaderSize,
                               length, body, sizeof(body));
    }
    at += length;
    if (n == 0) {
      continue;
    }
    if ((flags & 2) != 0) {
      body[n - 1] ^= 0x01;
    }
    size_t w = hostlink::encode_wire(body, n, encoded, sizeof(encoded));
    wire.insert(wire.end(), encoded, encoded + w);
  }
  return wire;
}

// True when the server answered anything.
bool run_one(const uint8_t* data, size_t size) {
  hostlink::Server& s = server();
  s.boot();
  size_t written = g_transport.written;
  if (size == 0) {
    return false;
  }
  if ((data[0] & 1) == 0) {
    s.receive(data + 1, size - 1);
  } else {
    std::vector<uint8_t> wire = script_to_wire(data, size);
    // In two pieces: a frame split across receive() calls must not matter.
    size_t half = wire.size() / 2;
    s.receive(wire.data(), half);
    s.receive(wire.data() + half, wire.size() - half);
  }
  return g_transport.written != written;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run_one(data, size);
  return 0;
}

#ifndef SDK_LIBFUZZER

namespace {

// Small or boundary values, where sizes, offsets and indices live.
const uint32_t kValues[] = {0, 1, 2, 4, 16, 48, 4096, 0xFFFF, 0xFFFFFFFF};

void record(std::vector<uint8_t>& script, uint8_t kind, const std::vector<uint8_t>& payload,
            uint8_t flags = 0) {
  script.push_back(kind);
  script.push_back(flags);
  script.push_back(static_cast<uint8_t>(payload.size()));
  script.push_back(static_cast<uint8_t>(payload.size() >> 8));
  script.insert(script.end(), payload.begin(), payload.end());
}

void put_u32(std::vector<uint8_t>& v, uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}

void put_u64(std::vector<uint8_t>& v, uint64_t x) {
  put_u32(v, static_cast<uint32_t>(x));
  put_u32(v, static_cast<uint32_t>(x >> 32));
}

// A script that loads `program`, sets its inputs (zeros), runs it twice, reads every output,
// and exercises the other requests.
std::vector<uint8_t> seed_script(const test::Bytes& program) {
  std::vector<uint8_t> script = {1};
  std::vector<uint8_t> p;
  put_u32(p, 0xC0FFEE);
  record(script, hostlink::kConnect, p);
  record(script, hostlink::kInfo, {});
  p.clear();
  put_u32(p, static_cast<uint32_t>(program.size()));
  uint8_t digest[hostlink::kSha256Size];
  hostlink::sha256(program.data(), program.size(), digest);
  p.insert(p.end(), digest, digest + sizeof(digest));
  record(script, hostlink::kLoadBegin, p);
  for (size_t offset = 0; offset < program.size(); offset += 4000) {
    size_t n = program.size() - offset < 4000 ? program.size() - offset : 4000;
    p.clear();
    put_u32(p, static_cast<uint32_t>(offset));
    p.insert(p.end(), program.data() + offset, program.data() + offset + n);
    record(script, hostlink::kLoadData, p);
  }
  record(script, hostlink::kLoadEnd, {});
  // A delegated program's backend init reads the NPU's ID and CONFIG (register exchanges).
  for (uint32_t value : {0x10060000u, 0x1807u}) {
    p.clear();
    put_u32(p, value);
    p.resize(8, 0);
    record(script, hostlink::kNpuDone, p);
  }
  // The inputs as the program declares them, from a load of our own.
  runner::Session session({{g_metadata, sizeof(g_metadata)}, {g_planned, sizeof(g_planned)},
                           {g_scratch, sizeof(g_scratch)}});
  size_t outputs = 0;
  if (session.load({program.data(), program.size()}) == rt::Error::Ok) {
    outputs = session.num_outputs();
    for (size_t i = 0; i < session.num_inputs(); ++i) {
      const rt::Tensor* t = nullptr;
      if (session.input_tensor(i, &t) != rt::Error::Ok) {
        continue;
      }
      for (size_t offset = 0; offset == 0 || offset < t->nbytes; offset += 2048) {
        size_t n = t->nbytes - offset < 2048 ? t->nbytes - offset : 2048;
        p.clear();
        p.push_back(static_cast<uint8_t>(i));
        p.push_back(static_cast<uint8_t>(i >> 8));
        p.push_back(static_cast<uint8_t>(t->dtype));
        p.push_back(t->dim);
        put_u32(p, static_cast<uint32_t>(t->nbytes));
        put_u32(p, static_cast<uint32_t>(offset));
        put_u32(p, 0);
        for (int d = 0; d < rt::kMaxDims; ++d) {
          put_u32(p, static_cast<uint32_t>(d < t->dim ? t->sizes[d] : 0));
        }
        p.resize(p.size() + n, 0);
        record(script, hostlink::kSetInput, p);
        if (t->nbytes == 0) break;
      }
    }
    // The same inputs again from the inputs slot (SET_INPUT_SLOT), where the SET_INPUTs above
    // left their copies (zeros): each at its place in the firmware's layout, with their CRC.
    size_t slot_offset = 0;
    for (size_t i = 0; i < session.num_inputs(); ++i) {
      const rt::Tensor* t = nullptr;
      if (session.input_tensor(i, &t) != rt::Error::Ok) {
        continue;
      }
      std::vector<uint8_t> zeros(t->nbytes, 0);
      p.clear();
      p.push_back(static_cast<uint8_t>(i));
      p.push_back(static_cast<uint8_t>(i >> 8));
      p.push_back(static_cast<uint8_t>(t->dtype));
      p.push_back(t->dim);
      put_u32(p, static_cast<uint32_t>(t->nbytes));
      put_u32(p, static_cast<uint32_t>(slot_offset));
      put_u32(p, runner::crc32(zeros.data(), zeros.size()));
      for (int d = 0; d < rt::kMaxDims; ++d) {
        put_u32(p, static_cast<uint32_t>(d < t->dim ? t->sizes[d] : 0));
      }
      record(script, hostlink::kSetInputSlot, p);
      // And from a host file (NotSupported here: the fuzzers' platform has no folder).
      p.push_back(6);
      p.resize(p.size() + 3, 0);
      for (char c : {'i', 'n', '.', 'b', 'i', 'n'}) p.push_back(static_cast<uint8_t>(c));
      record(script, hostlink::kSetInputFile, p);
      slot_offset = (slot_offset + t->nbytes + 15) / 16 * 16;
    }
  }
  session.unload();
  p.clear();
  put_u32(p, 2);
  record(script, hostlink::kRun, p);
  record(script, hostlink::kRun, p, 8);  // retransmitted: a delegate's job is announced again
  // A delegated program's two invocations (one per iteration), their register exchanges
  // answered as the host's model would (the driver's reads: ID, CONFIG, STATUS after the reset,
  // PROT, CMD; the start, with the NPU's memory traffic; in the interrupt STATUS and CMD; the
  // PMU cycle counter); for any other program these are refused (no exchange open).
  const uint32_t kAnswers[][2] = {{0x10060000, 0}, {0x1807, 0}, {0, 0}, {3, 0}, {0xC, 0},
                                  {0, 1},          {0x22, 1},   {0xC, 1}, {0, 0}, {0, 0}};
  for (int job = 0; job < 2; ++job) {
    for (const auto& answer : kAnswers) {
      if (answer[1] == 1 && answer[0] == 0) {  // the start: the NPU reads and writes memory
        p.clear();
        put_u64(p, reinterpret_cast<uintptr_t>(g_scratch));
        put_u32(p, 16);
        record(script, hostlink::kNpuHash, p);
        record(script, hostlink::kNpuRead, p);
        p.clear();
        put_u64(p, reinterpret_cast<uintptr_t>(g_scratch));
        p.resize(p.size() + 16, 0x5A);
        record(script, hostlink::kNpuWrite, p);
        // The same from a host file (the fuzzers' platform has no folder: NotSupported).
        p.clear();
        put_u64(p, reinterpret_cast<uintptr_t>(g_scratch));
        put_u32(p, 16);
        p.push_back(5);
        p.resize(p.size() + 3, 0);
        for (char c : {'n', '.', 'b', 'i', 'n'}) p.push_back(static_cast<uint8_t>(c));
        record(script, hostlink::kNpuWriteFile, p);
      }
      p.clear();
      put_u32(p, answer[0]);
      p.push_back(static_cast<uint8_t>(answer[1]));
      p.resize(p.size() + 3, 0);
      record(script, hostlink::kNpuDone, p);
    }
    record(script, hostlink::kNpuDone, p, 8);  // retransmitted
  }
  p.clear();
  put_u32(p, 0);
  p.resize(8, 0);
  record(script, hostlink::kNpuDone, p);  // outside an exchange
  p.clear();
  put_u32(p, 2);
  record(script, hostlink::kRun, p, 8);  // a RUN reusing the NPU_DONE's seq
  for (size_t i = 0; i < outputs; ++i) {
    p.clear();
    p.push_back(static_cast<uint8_t>(i));
    p.push_back(0);
    p.push_back(0);
    p.push_back(0);
    put_u32(p, 0);
    put_u32(p, 1000);
    record(script, hostlink::kGetOutput, p);
    // Its file (the fuzzers write none: the host platform has no folder, NotSupported), after
    // the name's checks.
    p.clear();
    p.push_back(static_cast<uint8_t>(i));
    p.resize(4, 0);
    p.push_back(9);
    p.resize(8, 0);
    for (char c : {'o', 'u', 't', '-', '0', '.', 'b', 'i', 'n'}) p.push_back(static_cast<uint8_t>(c));
    record(script, hostlink::kGetOutputFile, p);
  }
  record(script, hostlink::kStats, {});
  p = {2, 0, 0, 0};
  put_u32(p, 100);
  record(script, hostlink::kLinkTest, p);
  record(script, hostlink::kInfo, {}, 1);
  record(script, hostlink::kReset, {});
  record(script, hostlink::kInfo, {});
  return script;
}

// A file is a program to seed a script with; no file at all, the protocol alone.
void add_seeds(const fuzz::Input& file, std::vector<fuzz::Input>* seeds) {
  seeds->push_back(seed_script(test::Bytes(file.data(), file.size())));
}

// One time in three the script's framed bytes are fuzzed instead: the decoder's paths.
bool as_byte_stream(fuzz::Random& r, fuzz::Input* input) {
  if (r.below(3) != 0) return false;
  std::vector<uint8_t> wire = script_to_wire(input->data(), input->size());
  input->assign(1, 0);
  input->insert(input->end(), wire.begin(), wire.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  server();  // registers the backend: the seeds' own loads need it for delegated programs
  const fuzz::Target target = {
      "fuzz_link", "answered",
      {kValues, sizeof(kValues) / sizeof(kValues[0]), false, 64, true},
      add_seeds, as_byte_stream, "byte streams", run_one,
  };
  return fuzz::run_driver(target, argc, argv);
}

#endif  // SDK_LIBFUZZER
