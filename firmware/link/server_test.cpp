// The link server driven with encoded frames in memory through a fake transport.
#include <string.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend.h"
#include "frame.h"
#include "npu_absent.h"
#include "console.h"
#include "platform_host.h"
#include "runner.h"
#include "server.h"
#include "sha256.h"
#include "test_harness.h"
#include "test_support.h"
#include "vela_payload_builder.h"

using rt::ScalarType;
using Bytes = std::vector<uint8_t>;

namespace {

struct Response {
  uint8_t kind;
  uint16_t seq;
  uint32_t session;
  uint8_t flags;
  Bytes payload;
};

std::vector<Response> frames(const Bytes& out, std::string* raw = nullptr);

// The injectable clock (platform ticks: ns on the host); waiting moves it on.
uint64_t g_now = 0;
uint64_t fake_clock() { return g_now; }
constexpr uint64_t kWaitTicks = 100000000;  // 100 ms per wait()

// Bytes the server writes go to `out`; a scripted host (`host`) sees each frame as it is written
// and may queue requests into `in`, which read() hands out (what a job's nested loop reads).
class FakeTransport final : public hostlink::Transport {
 public:
  size_t read(uint8_t* data, size_t max) override {
    size_t n = in.size() < max ? in.size() : max;
    if (n == 0) return 0;
    memcpy(data, in.data(), n);
    in.erase(in.begin(), in.begin() + static_cast<long>(n));
    return n;
  }
  void write(const uint8_t* data, size_t size) override {
    out.insert(out.end(), data, data + size);
    if (host) {
      for (const Response& r : frames(Bytes(data, data + size))) host(r);
    }
  }
  bool wait() override {
    g_now += kWaitTicks;
    ++waits;
    return host != nullptr;  // without a scripted host nothing can come
  }
  void flush() override {}
  void reset() override { ++resets; }
  uint32_t rx_overflows() override { return 0; }
  Bytes out;
  Bytes in;
  std::function<void(const Response&)> host;
  int resets = 0;
  int waits = 0;
};

alignas(16) uint8_t g_metadata[1 << 16];
alignas(16) uint8_t g_planned[1 << 16];
alignas(16) uint8_t g_slot[1 << 16];
alignas(16) uint8_t g_stash[1 << 12];
alignas(16) uint8_t g_scratch[1 << 12];

uint32_t u32(const Bytes& b, size_t at) {
  return static_cast<uint32_t>(b[at]) | (static_cast<uint32_t>(b[at + 1]) << 8) |
         (static_cast<uint32_t>(b[at + 2]) << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}
uint16_t u16(const Bytes& b, size_t at) { return static_cast<uint16_t>(b[at] | (b[at + 1] << 8)); }
uint64_t u64(const Bytes& b, size_t at) {
  return u32(b, at) | (static_cast<uint64_t>(u32(b, at + 4)) << 32);
}
void put_u16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put_u32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes wire(uint8_t kind, uint16_t seq, uint32_t session, const Bytes& payload) {
  Bytes body(hostlink::kMinBody + payload.size());
  size_t n = hostlink::build_body(kind, seq, session, 0, payload.data(), payload.size(),
                                  body.data(), body.size());
  Bytes w(hostlink::kMaxWire);
  w.resize(hostlink::encode_wire(body.data(), n, w.data(), w.size()));
  return w;
}

// Every frame in what the server wrote (non-frame bytes: console text, raw LINK_TEST bytes,
// must not be there unless `raw` is given to collect them).
std::vector<Response> frames(const Bytes& out, std::string* raw) {
  std::vector<Response> result;
  size_t start = 0;
  for (size_t i = 0; i <= out.size(); ++i) {
    if (i < out.size() && out[i] != 0) continue;
    if (i > start) {
      Bytes body(i - start);
      size_t n = 0;
      hostlink::Frame f;
      hostlink::NakReason why;
      if (hostlink::cobs_decode(out.data() + start, i - start, body.data(), body.size(), &n) &&
          hostlink::parse_body(body.data(), n, &f, &why)) {
        result.push_back({f.kind, f.seq, f.session, f.flags, Bytes(f.payload, f.payload + f.length)});
      } else if (raw != nullptr) {
        raw->append(reinterpret_cast<const char*>(out.data() + start), i - start);
      } else {
        result.push_back({0xEE, 0, 0, 0, {}});  // something that is not a frame
      }
    }
    start = i + 1;
  }
  return result;
}

// x + 1 * y over [2, 3] floats with the placeholder add kernel.
test::Bytes add_program() {
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

constexpr uint32_t kSession = 0x5EED1234;

// A server, connected, with a helper per request.
class Link {
 public:
  Link()
      : config_{{{g_metadata, sizeof(g_metadata)}, {g_planned, sizeof(g_planned)},
                 {g_scratch, sizeof(g_scratch)}},
                {g_slot, sizeof(g_slot)},
                {g_stash, sizeof(g_stash)},
                {nullptr, 0},
                "1.2.3",
                "testboard",
                "ethos-u55-128",
                0,
                0},
        server_(transport_, config_) {
    server_.boot();
  }
  Response request(uint8_t kind, const Bytes& payload, uint32_t session = kSession) {
    return request_seq(kind, ++seq_, payload, session);
  }
  Response request_seq(uint8_t kind, uint16_t seq, const Bytes& payload,
                       uint32_t session = kSession) {
    transport_.out.clear();
    Bytes w = wire(kind, seq, session, payload);
    server_.receive(w.data(), w.size());
    std::vector<Response> got = frames(transport_.out);
    last_count_ = got.size();
    return got.empty() ? Response{0, 0, 0, 0, {}} : got.back();
  }
  Response connect() {
    Bytes p;
    put_u32(p, kSession);
    return request(hostlink::kConnect, p, 0);
  }
  Response load(const test::Bytes& program, size_t chunk = 100) {
    Bytes begin;
    put_u32(begin, static_cast<uint32_t>(program.size()));
    uint8_t sha[32];
    hostlink::sha256(program.data(), program.size(), sha);
    begin.insert(begin.end(), sha, sha + 32);
    Response r = request(hostlink::kLoadBegin, begin);
    if (r.kind != hostlink::kLoadBegin) return r;
    for (size_t off = 0; off < program.size(); off += chunk) {
      Bytes data;
      put_u32(data, static_cast<uint32_t>(off));
      size_t n = program.size() - off < chunk ? program.size() - off : chunk;
      data.insert(data.end(), program.data() + off, program.data() + off + n);
      r = request(hostlink::kLoadData, data);
      if (r.kind != hostlink::kLoadData) return r;
    }
    return request(hostlink::kLoadEnd, {});
  }
  static Bytes tensor_header(uint16_t index, uint8_t dtype, std::vector<int32_t> sizes,
                             uint32_t nbytes, uint32_t offset) {
    Bytes h;
    put_u16(h, index);
    h.push_back(dtype);
    h.push_back(static_cast<uint8_t>(sizes.size()));
    put_u32(h, nbytes);
    put_u32(h, offset);
    put_u32(h, 0);
    for (size_t d = 0; d < 8; ++d) put_u32(h, d < sizes.size() ? static_cast<uint32_t>(sizes[d]) : 0);
    return h;
  }
  Response set_input(uint16_t index, const float* values, size_t from, size_t count) {
    Bytes p = tensor_header(index, static_cast<uint8_t>(ScalarType::Float), {2, 3}, 24,
                            static_cast<uint32_t>(from * 4));
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(values + from);
    p.insert(p.end(), bytes, bytes + count * 4);
    return request(hostlink::kSetInput, p);
  }
  Response run(uint32_t iterations) {
    Bytes p;
    put_u32(p, iterations);
    return request(hostlink::kRun, p);
  }
  Response get_output(uint16_t index, uint32_t offset, uint32_t max_bytes) {
    Bytes p;
    put_u16(p, index);
    put_u16(p, 0);
    put_u32(p, offset);
    put_u32(p, max_bytes);
    return request(hostlink::kGetOutput, p);
  }
  void feed(const Bytes& bytes) {
    transport_.out.clear();
    server_.receive(bytes.data(), bytes.size());
  }

  FakeTransport transport_;
  hostlink::ServerConfig config_;
  hostlink::Server server_;
  uint16_t seq_ = 0;
  size_t last_count_ = 0;
};

// ERROR payload: code, name, request kind, reason.
struct ErrorInfo {
  int code;
  std::string name;
  int kind;
  std::string reason;
};

ErrorInfo error_of(const Response& r) {
  if (r.kind != hostlink::kError || r.payload.size() < 4) return {-1, "", -1, ""};
  size_t name_length = r.payload[1];
  std::string name(r.payload.begin() + 4, r.payload.begin() + 4 + static_cast<long>(name_length));
  std::string reason(r.payload.begin() + 4 + static_cast<long>(name_length), r.payload.end());
  return {r.payload[0], name, u16(r.payload, 2), reason};
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

const float kA[6] = {1, 2, 3, 4, 5, 6};
const float kB[6] = {10, 20, 30, 40, 50, 60};

Link* g_link = nullptr;  // one at a time, static: the server's buffers are large

Link& fresh_link() {
  delete g_link;
  g_link = new Link();
  return *g_link;
}

}  // namespace

TEST(server_sends_hello_at_boot_with_the_info_payload) {
  Link& link = fresh_link();
  std::vector<Response> got = frames(link.transport_.out);
  CHECK_EQ(got.size(), 1);
  const Response& hello = got[0];
  CHECK_EQ(hello.kind, hostlink::kHello);
  CHECK_EQ(hello.seq, 0);
  CHECK_EQ(hello.session, 0);
  CHECK_EQ(hello.flags, hostlink::kFlagResponse);
  CHECK_EQ(u16(hello.payload, 0), 1);
  CHECK_EQ(u32(hello.payload, 4), 4096);
  CHECK_EQ(u32(hello.payload, 24), sizeof(g_planned));
  CHECK_EQ(u32(hello.payload, 32), sizeof(g_slot));
  CHECK_EQ(hello.payload[36], 0);  // no program
  size_t at = 72;
  std::string version(hello.payload.begin() + at + 1, hello.payload.begin() + at + 1 + hello.payload[at]);
  CHECK(version == "1.2.3");
  at += 1 + hello.payload[at];
  std::string board(hello.payload.begin() + at + 1, hello.payload.begin() + at + 1 + hello.payload[at]);
  CHECK(board == "testboard");
  at += 1 + hello.payload[at];
  at += 1 + hello.payload[at];
  CHECK_EQ(u16(hello.payload, at), rt::kKernelTableSize);
  CHECK_EQ(u16(hello.payload, at + 2), rt::kKernelTableSize);
  std::string first(hello.payload.begin() + at + 5, hello.payload.begin() + at + 5 + hello.payload[at + 4]);
  CHECK(first == rt::kKernelTable[0].name);
}

TEST(server_connect_sets_the_session_and_others_are_refused) {
  Link& link = fresh_link();
  Response r = link.connect();
  CHECK_EQ(r.kind, hostlink::kConnect);
  CHECK_EQ(r.session, kSession);
  CHECK_EQ(link.server_.session(), kSession);
  r = link.request(hostlink::kInfo, {}, kSession + 1);
  ErrorInfo e = error_of(r);
  CHECK_EQ(e.code, 15);
  CHECK(e.name == "BadMessage");
  CHECK_EQ(e.kind, hostlink::kInfo);
  CHECK(has(e.reason, "session"));
  CHECK_EQ(r.session, kSession);  // the firmware's own
  r = link.request(hostlink::kInfo, {});
  CHECK_EQ(r.kind, hostlink::kInfo);
}

TEST(server_unknown_kinds_and_wrong_sizes_are_bad_messages) {
  Link& link = fresh_link();
  link.connect();
  ErrorInfo e = error_of(link.request(0x44, {1, 2}));
  CHECK(e.name == "BadMessage" && e.kind == 0x44 && has(e.reason, "unknown request kind 0x44"));
  e = error_of(link.request(hostlink::kInfo, {1}));
  CHECK(e.name == "BadMessage" && has(e.reason, "INFO payload is 1 bytes, expected 0"));
  e = error_of(link.request(hostlink::kRun, {1, 0}));
  CHECK(e.name == "BadMessage" && has(e.reason, "RUN payload is 2 bytes"));
}

TEST(server_bad_frames_get_a_nak_and_change_nothing) {
  Link& link = fresh_link();
  link.connect();
  Bytes good = wire(hostlink::kInfo, 50, kSession, {});
  Bytes damaged = good;
  damaged[3] ^= 0x01;
  link.feed(damaged);
  std::vector<Response> got = frames(link.transport_.out);
  CHECK_EQ(got.size(), 1);
  CHECK_EQ(got[0].kind, hostlink::kNak);
  CHECK_EQ(got[0].seq, 0);
  CHECK_EQ(got[0].payload[0], 1);  // CRC
  link.feed({0, 0x05, 0x11, 0});
  got = frames(link.transport_.out);
  CHECK(got.size() == 1 && got[0].kind == hostlink::kNak && got[0].payload[0] == 4);  // COBS
  link.feed({0, 0x03, 0x11, 0x22, 0});
  got = frames(link.transport_.out);
  CHECK(got.size() == 1 && got[0].kind == hostlink::kNak && got[0].payload[0] == 5);  // short
  Bytes too_long(hostlink::kMaxWire + 100, 0x33);
  too_long[0] = 0;
  too_long.back() = 0;
  link.feed(too_long);
  got = frames(link.transport_.out);
  CHECK(got.size() == 1 && got[0].kind == hostlink::kNak && got[0].payload[0] == 2);
  CHECK_EQ(link.server_.session(), kSession);
  link.feed(good);
  got = frames(link.transport_.out);
  CHECK(got.size() == 1 && got[0].kind == hostlink::kInfo);
}

TEST(server_loads_a_program_in_chunks) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  Response r = link.load(program);
  CHECK_EQ(r.kind, hostlink::kLoadEnd);
  CHECK_EQ(r.payload.size(), 28);
  CHECK_EQ(u16(r.payload, 24), 2);  // inputs
  CHECK_EQ(u16(r.payload, 26), 1);  // outputs
  CHECK_EQ(u32(r.payload, 20), sizeof(g_planned));
  CHECK(link.server_.program_loaded());
  r = link.request(hostlink::kInfo, {});
  CHECK_EQ(r.payload[36], 1);
  uint8_t sha[32];
  hostlink::sha256(program.data(), program.size(), sha);
  CHECK(memcmp(r.payload.data() + 40, sha, 32) == 0);
}

TEST(server_retransmitted_load_data_is_answered_without_applying_it_twice) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  Bytes begin;
  put_u32(begin, static_cast<uint32_t>(program.size()));
  uint8_t sha[32];
  hostlink::sha256(program.data(), program.size(), sha);
  begin.insert(begin.end(), sha, sha + 32);
  CHECK_EQ(link.request(hostlink::kLoadBegin, begin).kind, hostlink::kLoadBegin);
  Bytes chunk;
  put_u32(chunk, 0);
  chunk.insert(chunk.end(), program.data(), program.data() + 64);
  Response first = link.request(hostlink::kLoadData, chunk);
  Bytes kept = link.transport_.out;
  CHECK_EQ(u32(first.payload, 0), 64);
  Response again = link.request_seq(hostlink::kLoadData, link.seq_, chunk);
  CHECK(link.transport_.out == kept);  // byte for byte the kept response
  CHECK_EQ(u32(again.payload, 0), 64);  // not 128
  // The rest goes on from 64.
  Bytes rest;
  put_u32(rest, 64);
  rest.insert(rest.end(), program.data() + 64, program.data() + program.size());
  CHECK_EQ(link.request(hostlink::kLoadData, rest).kind, hostlink::kLoadData);
  CHECK_EQ(link.request(hostlink::kLoadEnd, {}).kind, hostlink::kLoadEnd);
}

TEST(server_out_of_order_chunks_are_refused_and_change_nothing) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  Bytes begin;
  put_u32(begin, static_cast<uint32_t>(program.size()));
  begin.resize(36, 0);
  link.request(hostlink::kLoadBegin, begin);
  Bytes chunk;
  put_u32(chunk, 10);
  chunk.insert(chunk.end(), 5, 0xAA);
  ErrorInfo e = error_of(link.request(hostlink::kLoadData, chunk));
  CHECK(e.name == "BadMessage" && has(e.reason, "offset 10, expected 0"));
  Bytes past;
  put_u32(past, 0);
  past.insert(past.end(), program.size() + 1, 0xAA);
  e = error_of(link.request(hostlink::kLoadData, past));
  CHECK(e.name == "BadMessage" && has(e.reason, "passes the announced"));
  e = error_of(link.request(hostlink::kLoadEnd, {}));
  CHECK(e.name == "BadMessage" && has(e.reason, "after 0 of the announced"));
}

TEST(server_oversize_load_names_both_sizes) {
  Link& link = fresh_link();
  link.connect();
  Bytes begin;
  put_u32(begin, 1000000);
  begin.resize(36, 0);
  Response r = link.request(hostlink::kLoadBegin, begin);
  ErrorInfo e = error_of(r);
  CHECK(e.name == "OutOfMemory");
  CHECK_EQ(e.code, 7);
  CHECK(has(e.reason, "1000000"));
  CHECK(has(e.reason, std::to_string(sizeof(g_slot)).c_str()));
}

TEST(server_hash_mismatch_is_refused) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  Bytes begin;
  put_u32(begin, static_cast<uint32_t>(program.size()));
  begin.resize(36, 0x77);  // not its SHA-256
  link.request(hostlink::kLoadBegin, begin);
  Bytes chunk;
  put_u32(chunk, 0);
  chunk.insert(chunk.end(), program.data(), program.data() + program.size());
  link.request(hostlink::kLoadData, chunk);
  ErrorInfo e = error_of(link.request(hostlink::kLoadEnd, {}));
  CHECK(e.name == "InvalidProgram" && has(e.reason, "SHA-256"));
  CHECK(!link.server_.program_loaded());
}

TEST(server_a_corrupt_program_is_the_runtime_error) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  program.data()[4] = 'X';  // the ET12 identifier
  ErrorInfo e = error_of(link.load(program));
  CHECK(e.name == "InvalidProgram");
  CHECK(!e.reason.empty());
}

TEST(server_run_before_inputs_are_set_is_refused) {
  Link& link = fresh_link();
  link.connect();
  ErrorInfo e = error_of(link.run(1));
  CHECK(e.name == "BadMessage" && has(e.reason, "no program loaded"));
  link.load(add_program());
  link.set_input(0, kA, 0, 6);
  link.set_input(1, kB, 0, 3);  // half of input 1
  e = error_of(link.run(1));
  CHECK(e.name == "BadMessage" && has(e.reason, "input 1 has not been set"));
  e = error_of(link.get_output(0, 0, 100));
  CHECK(e.name == "BadMessage" && has(e.reason, "no RUN has passed"));
}

TEST(server_set_input_checks_dtype_shape_and_order) {
  Link& link = fresh_link();
  link.connect();
  link.load(add_program());
  Bytes p = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Int), {2, 3}, 24, 0);
  p.resize(p.size() + 24);
  ErrorInfo e = error_of(link.request(hostlink::kSetInput, p));
  CHECK(e.name == "InputMismatch" && has(e.reason, "dtype"));
  p = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Float), {3, 2}, 24, 0);
  e = error_of(link.request(hostlink::kSetInput, p));
  CHECK(e.name == "InputMismatch" && has(e.reason, "shape [3,2] given, the program takes [2,3]"));
  p = Link::tensor_header(2, static_cast<uint8_t>(ScalarType::Float), {2, 3}, 24, 0);
  e = error_of(link.request(hostlink::kSetInput, p));
  CHECK(e.name == "InputMismatch");
  CHECK_EQ(link.set_input(0, kA, 0, 2).kind, hostlink::kSetInput);
  e = error_of(link.set_input(0, kA, 3, 3));  // skips bytes 8..12
  CHECK(e.name == "BadMessage" && has(e.reason, "offset 12, expected 8"));
  p = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Float), {2, 3}, 24, 8);
  p.resize(p.size() + 20);  // 8 + 20 > 24
  e = error_of(link.request(hostlink::kSetInput, p));
  CHECK(e.name == "BadMessage" && has(e.reason, "passes its 24 bytes"));
}

TEST(server_runs_and_returns_outputs_with_their_crc) {
  Link& link = fresh_link();
  link.connect();
  link.load(add_program());
  Response r = link.set_input(0, kA, 0, 4);
  CHECK_EQ(u32(r.payload, 4), 16);
  r = link.set_input(0, kA, 4, 2);
  CHECK_EQ(u32(r.payload, 4), 24);
  link.set_input(1, kB, 0, 6);
  r = link.run(3);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(u32(r.payload, 0), 3);
  CHECK(u64(r.payload, 8) >= u64(r.payload, 16));    // total >= min
  CHECK(u64(r.payload, 24) >= u64(r.payload, 16));   // max >= min
  CHECK_EQ(link.server_.runs(), 3);
  // A retransmitted RUN is answered from the kept response: no fourth run.
  Bytes p;
  put_u32(p, 3);
  link.request_seq(hostlink::kRun, link.seq_, p);
  CHECK_EQ(link.server_.runs(), 3);
  float expected[6];
  for (int i = 0; i < 6; ++i) expected[i] = kA[i] + kB[i];
  r = link.get_output(0, 0, 10);
  CHECK_EQ(r.kind, hostlink::kGetOutput);
  CHECK_EQ(r.payload.size(), 48 + 10);
  CHECK_EQ(u32(r.payload, 4), 24);
  CHECK_EQ(u32(r.payload, 12), runner::crc32(reinterpret_cast<const uint8_t*>(expected), 24));
  CHECK_EQ(r.payload[2], static_cast<uint8_t>(ScalarType::Float));
  CHECK_EQ(r.payload[3], 2);
  CHECK_EQ(u32(r.payload, 16), 2);
  CHECK_EQ(u32(r.payload, 20), 3);
  Bytes data(r.payload.begin() + 48, r.payload.end());
  r = link.get_output(0, 10, 1000);
  CHECK_EQ(r.payload.size(), 48 + 14);
  data.insert(data.end(), r.payload.begin() + 48, r.payload.end());
  CHECK(memcmp(data.data(), expected, 24) == 0);
  ErrorInfo e = error_of(link.get_output(1, 0, 10));
  CHECK(e.name == "BadMessage");
  r = link.request(hostlink::kStats, {});
  CHECK_EQ(r.payload.size(), 64);
  CHECK_EQ(u32(r.payload, 4), 3);
  // A new input invalidates the outputs.
  link.set_input(0, kA, 0, 6);
  e = error_of(link.get_output(0, 0, 10));
  CHECK(e.name == "BadMessage");
}

TEST(server_inputs_whose_memory_the_plan_reuses_are_put_back_before_each_run) {
  // out = a + b written over a's memory, as a memory plan may do once a is consumed.
  test::ProgramBuilder p;
  int a = p.planned(ScalarType::Float, {2, 3}, 0);
  int b = p.planned(ScalarType::Float, {2, 3}, 32);
  int alpha = p.int_value(1);
  int out = p.planned(ScalarType::Float, {2, 3}, 0);
  p.kernel_call(p.op("aten::add", "out"), {a, b, alpha, out, out});
  p.set_inputs({a, b});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 64});
  Link& link = fresh_link();
  link.connect();
  CHECK_EQ(link.load(p.finish()).kind, hostlink::kLoadEnd);
  link.set_input(0, kA, 0, 6);
  link.set_input(1, kB, 0, 6);
  CHECK_EQ(link.run(3).kind, hostlink::kRun);
  CHECK_EQ(link.run(1).kind, hostlink::kRun);
  Response r = link.get_output(0, 0, 24);
  float got[6];
  memcpy(got, r.payload.data() + 48, 24);
  for (int i = 0; i < 6; ++i) CHECK(got[i] == kA[i] + kB[i]);
}

TEST(server_failing_run_is_an_error_naming_the_kernel_reason) {
  test::ProgramBuilder p;
  int a = p.planned(ScalarType::Float, {2}, 0);
  int out = p.planned(ScalarType::Float, {2}, 16);
  p.kernel_call(p.op("test::fail", "default"), {a, out});
  p.set_inputs({a});
  p.set_outputs({out});
  p.set_buffer_sizes({0, 32});
  test::Bytes program = p.finish();
  Link& link = fresh_link();
  link.connect();
  CHECK_EQ(link.load(program).kind, hostlink::kLoadEnd);
  Bytes in = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Float), {2}, 8, 0);
  in.resize(in.size() + 8);
  link.request(hostlink::kSetInput, in);
  ErrorInfo e = error_of(link.run(2));
  CHECK(e.name == "KernelFailed");
  CHECK(has(e.reason, "iteration 1 of 2"));
}

TEST(server_load_slot_reads_an_sdkp_blob) {
  Link& link = fresh_link();
  link.connect();
  test::Bytes program = add_program();
  memset(g_slot, 0, sizeof(g_slot));
  Bytes header;
  put_u32(header, contract::kProgramBlobMagic);
  put_u32(header, contract::kProgramBlobVersion);
  put_u32(header, static_cast<uint32_t>(program.size()));
  put_u32(header, runner::crc32(program.data(), program.size()));
  header.resize(32, 0);
  memcpy(g_slot, header.data(), 32);
  memcpy(g_slot + 32, program.data(), program.size());
  Bytes req;
  put_u32(req, static_cast<uint32_t>(program.size()));
  uint8_t sha[32];
  hostlink::sha256(program.data(), program.size(), sha);
  req.insert(req.end(), sha, sha + 32);
  Response r = link.request(hostlink::kLoadSlot, req);
  CHECK_EQ(r.kind, hostlink::kLoadSlot);
  CHECK_EQ(u16(r.payload, 24), 2);
  req[4] ^= 1;
  ErrorInfo e = error_of(link.request(hostlink::kLoadSlot, req));
  CHECK(e.name == "InvalidProgram" && has(e.reason, "SHA-256"));
  g_slot[40] ^= 1;
  e = error_of(link.request(hostlink::kLoadSlot, req));
  CHECK(e.name == "InvalidProgram" && has(e.reason, "CRC"));
}

// SET_INPUT_SLOT's header: the input's offset in the inputs slot and the CRC-32 there.
Bytes slot_header(uint16_t index, uint32_t offset, uint32_t crc) {
  Bytes h = Link::tensor_header(index, static_cast<uint8_t>(ScalarType::Float), {2, 3}, 24, offset);
  h[12] = static_cast<uint8_t>(crc);
  h[13] = static_cast<uint8_t>(crc >> 8);
  h[14] = static_cast<uint8_t>(crc >> 16);
  h[15] = static_cast<uint8_t>(crc >> 24);
  return h;
}

Bytes output_file_request(uint16_t index, const std::string& name) {
  Bytes p;
  put_u16(p, index);
  put_u16(p, 0);
  put_u16(p, static_cast<uint16_t>(name.size()));
  put_u16(p, 0);
  p.insert(p.end(), name.begin(), name.end());
  return p;
}

uint32_t crc_of(const float* values) {
  return runner::crc32(reinterpret_cast<const uint8_t*>(values), 24);
}

TEST(server_set_input_slot_takes_what_the_host_preloaded_when_its_crc_matches) {
  Link& link = fresh_link();
  link.connect();
  ErrorInfo e = error_of(link.request(hostlink::kSetInputSlot, slot_header(0, 0, 0)));
  CHECK(e.name == "BadMessage" && has(e.reason, "no program loaded"));
  link.load(add_program());
  memset(g_stash, 0, sizeof(g_stash));
  memcpy(g_stash, kA, 24);       // input 0 at 0
  memcpy(g_stash + 32, kB, 24);  // input 1 at 32: 24 bytes rounded up to 16
  e = error_of(link.request(hostlink::kSetInputSlot, slot_header(0, 0, crc_of(kB))));
  CHECK(e.name == "InputMismatch" && has(e.reason, "not the input it preloaded"));
  e = error_of(link.request(hostlink::kSetInputSlot, slot_header(1, 24, crc_of(kB))));
  CHECK(e.name == "BadMessage" && has(e.reason, "offset 24 of the inputs slot, the firmware keeps it at 32"));
  Bytes longer = slot_header(0, 0, crc_of(kA));
  longer.push_back(0);
  e = error_of(link.request(hostlink::kSetInputSlot, longer));
  CHECK(e.name == "BadMessage" && has(e.reason, "its 48-byte header alone"));
  Bytes wrong_shape = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Float), {3, 2}, 24, 0);
  e = error_of(link.request(hostlink::kSetInputSlot, wrong_shape));
  CHECK(e.name == "InputMismatch" && has(e.reason, "shape"));
  e = error_of(link.run(1));
  CHECK(e.name == "BadMessage" && has(e.reason, "input 0 has not been set"));
  Response r = link.request(hostlink::kSetInputSlot, slot_header(0, 0, crc_of(kA)));
  CHECK_EQ(r.kind, hostlink::kSetInputSlot);
  CHECK_EQ(u16(r.payload, 0), 0);
  CHECK_EQ(u32(r.payload, 4), 24);
  CHECK_EQ(link.request(hostlink::kSetInputSlot, slot_header(1, 32, crc_of(kB))).kind,
           hostlink::kSetInputSlot);
  CHECK_EQ(link.run(2).kind, hostlink::kRun);  // the second run puts the slot's copies back
  r = link.get_output(0, 0, 24);
  float got[6];
  memcpy(got, r.payload.data() + 48, 24);
  for (int i = 0; i < 6; ++i) CHECK(got[i] == kA[i] + kB[i]);
  // A SET_INPUT over the link replaces the slot's copy: the old CRC no longer holds.
  link.set_input(0, kB, 0, 6);
  e = error_of(link.request(hostlink::kSetInputSlot, slot_header(0, 0, crc_of(kA))));
  CHECK(e.name == "InputMismatch");
}

Bytes file_input_request(uint16_t index, uint32_t offset, uint32_t crc, const std::string& name) {
  Bytes p = slot_header(index, offset, crc);
  put_u16(p, static_cast<uint16_t>(name.size()));
  put_u16(p, 0);
  p.insert(p.end(), name.begin(), name.end());
  return p;
}

void write_file(const std::string& path, const void* data, size_t size) {
  FILE* f = fopen(path.c_str(), "wb");
  CHECK(f != nullptr);
  if (f) {
    fwrite(data, 1, size, f);
    fclose(f);
  }
}

TEST(server_set_input_file_reads_the_input_into_the_slot_and_checks_its_crc) {
  Link& link = fresh_link();
  link.connect();
  link.load(add_program());
  char dir[] = "/tmp/server_test_inputs.XXXXXX";
  CHECK(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/in.bin";
  host_platform_file_dir(nullptr);
  ErrorInfo e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kB), "in.bin")));
  CHECK(e.name == "NotSupported" && has(e.reason, "no semihosting"));
  host_platform_file_dir(dir);
  e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kB), "in.bin")));
  CHECK(e.name == "InputMismatch" && has(e.reason, "would not open"));
  write_file(path, kB, 20);  // 4 bytes short
  e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kB), "in.bin")));
  CHECK(e.name == "InputMismatch" && has(e.reason, "does not hold exactly 24 bytes"));
  write_file(path, kB, 24);
  e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kA), "in.bin")));
  CHECK(e.name == "InputMismatch" && has(e.reason, "not the input it wrote"));
  e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kB), "/etc/x")));
  CHECK(e.name == "BadMessage");
  e = error_of(link.request(hostlink::kSetInputFile, slot_header(0, 0, crc_of(kB))));
  CHECK(e.name == "BadMessage" && has(e.reason, "at least 52"));
  Response r = link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kB), "in.bin"));
  CHECK_EQ(r.kind, hostlink::kSetInputFile);
  CHECK_EQ(u32(r.payload, 4), 24);
  write_file(path, kA, 24);
  CHECK_EQ(link.request(hostlink::kSetInputFile, file_input_request(1, 32, crc_of(kA), "in.bin")).kind,
           hostlink::kSetInputFile);
  CHECK_EQ(link.run(2).kind, hostlink::kRun);
  r = link.get_output(0, 0, 24);
  float got[6];
  memcpy(got, r.payload.data() + 48, 24);
  for (int i = 0; i < 6; ++i) CHECK(got[i] == kA[i] + kB[i]);
  // A failed read leaves the input unset: no RUN on what half a file left in the slot.
  write_file(path, kA, 8);
  e = error_of(link.request(hostlink::kSetInputFile, file_input_request(0, 0, crc_of(kA), "in.bin")));
  CHECK(e.name == "InputMismatch");
  e = error_of(link.run(1));
  CHECK(e.name == "BadMessage" && has(e.reason, "input 0 has not been set"));
  host_platform_file_dir(nullptr);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(server_get_output_file_writes_a_passed_run_s_output_under_a_checked_name) {
  Link& link = fresh_link();
  link.connect();
  link.load(add_program());
  link.set_input(0, kA, 0, 6);
  link.set_input(1, kB, 0, 6);
  ErrorInfo e = error_of(link.request(hostlink::kGetOutputFile, output_file_request(0, "o.bin")));
  CHECK(e.name == "BadMessage" && has(e.reason, "no RUN has passed"));
  CHECK_EQ(link.run(1).kind, hostlink::kRun);
  host_platform_file_dir(nullptr);  // as a firmware without semihosting
  e = error_of(link.request(hostlink::kGetOutputFile, output_file_request(0, "o.bin")));
  CHECK(e.name == "NotSupported" && has(e.reason, "no semihosting"));
  char dir[] = "/tmp/server_test_files.XXXXXX";
  CHECK(mkdtemp(dir) != nullptr);
  host_platform_file_dir(dir);
  for (const char* bad : {"", "../o.bin", ".o", "a/b", "o bin", "o\\b"}) {
    e = error_of(link.request(hostlink::kGetOutputFile, output_file_request(0, bad)));
    CHECK(e.name == "BadMessage");
  }
  e = error_of(link.request(hostlink::kGetOutputFile, output_file_request(0, std::string(65, 'a'))));
  CHECK(e.name == "BadMessage" && has(e.reason, "1..64"));
  Bytes lying = output_file_request(0, "o.bin");
  lying[4] = 4;  // says 4 bytes of name, 5 follow
  e = error_of(link.request(hostlink::kGetOutputFile, lying));
  CHECK(e.name == "BadMessage");
  e = error_of(link.request(hostlink::kGetOutputFile, output_file_request(1, "o.bin")));
  CHECK(e.name == "BadMessage" && has(e.reason, "no output 1"));
  Response r = link.request(hostlink::kGetOutputFile, output_file_request(0, "out-0.bin"));
  CHECK_EQ(r.kind, hostlink::kGetOutputFile);
  CHECK_EQ(r.payload.size(), 48);  // the header alone: the bytes are in the file
  float expected[6];
  for (int i = 0; i < 6; ++i) expected[i] = kA[i] + kB[i];
  CHECK_EQ(u32(r.payload, 4), 24);
  CHECK_EQ(u32(r.payload, 12), crc_of(expected));
  std::string path = std::string(dir) + "/out-0.bin";
  FILE* f = fopen(path.c_str(), "rb");
  CHECK(f != nullptr);
  float got[7] = {};
  size_t n = f ? fread(got, 1, sizeof(got), f) : 0;
  if (f) fclose(f);
  CHECK_EQ(n, 24);
  CHECK(memcmp(got, expected, 24) == 0);
  unlink(path.c_str());
  rmdir(dir);
  host_platform_file_dir(nullptr);
}

TEST(server_link_test_source_and_sink) {
  Link& link = fresh_link();
  link.connect();
  Bytes p = {2, 0, 0, 0};
  put_u32(p, 300);
  link.request(hostlink::kLinkTest, p);
  std::string raw;
  std::vector<Response> got = frames(link.transport_.out, &raw);
  CHECK_EQ(got.size(), 2);
  CHECK(raw == std::string(300, 0x55));
  CHECK_EQ(u32(got[1].payload, 0), 300);
  p = {1, 0, 0, 0};
  put_u32(p, 1000);
  link.request(hostlink::kLinkTest, p);
  CHECK_EQ(link.last_count_, 1);  // the first response only
  Bytes raw_in(1000, 0);  // zeros too: not framed
  link.feed(raw_in);
  got = frames(link.transport_.out);
  CHECK_EQ(got.size(), 1);
  CHECK_EQ(got[0].kind, hostlink::kLinkTest);
  CHECK_EQ(u32(got[0].payload, 0), 1000);
  CHECK_EQ(link.request(hostlink::kInfo, {}).kind, hostlink::kInfo);  // framing again
  ErrorInfo e = error_of(link.request(hostlink::kLinkTest, {3, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(e.name == "BadMessage");
}

TEST(server_reset_answers_then_boots_again) {
  Link& link = fresh_link();
  link.connect();
  link.load(add_program());
  link.request(hostlink::kReset, {});
  std::vector<Response> got = frames(link.transport_.out);
  CHECK_EQ(got.size(), 2);
  CHECK_EQ(got[0].kind, hostlink::kReset);
  CHECK_EQ(got[1].kind, hostlink::kHello);
  CHECK_EQ(link.transport_.resets, 1);
  CHECK_EQ(link.server_.session(), 0);
  CHECK(!link.server_.program_loaded());
}

TEST(server_a_frame_split_across_receives_is_one_request) {
  Link& link = fresh_link();
  Bytes p;
  put_u32(p, kSession);
  Bytes w = wire(hostlink::kConnect, 1, 0, p);
  link.transport_.out.clear();
  for (uint8_t byte : w) link.server_.receive(&byte, 1);
  std::vector<Response> got = frames(link.transport_.out);
  CHECK_EQ(got.size(), 1);
  CHECK_EQ(got[0].kind, hostlink::kConnect);
}

// ---- The virtual U55 (docs/link.md "Virtual U55") -------------------------------------------

namespace {

// in (Char [16]) -> EthosUBackend -> out (Char [16]): the standard Vela payload (input at
// scratch offset 0, output at 16, scratch 32; compiled for CONFIG 0x1807, ID 0x10066001).
struct Delegated {
  std::vector<uint8_t> payload = test::VelaBuilder::standard().bytes();
  test::Bytes program;
  Delegated() {
    test::ProgramBuilder p;
    int x = p.planned(ScalarType::Char, {16}, 0);
    int y = p.planned(ScalarType::Char, {16}, 128);
    p.delegate_call(p.delegate("EthosUBackend", payload, {}), {x, y});
    p.set_inputs({x});
    p.set_outputs({y});
    p.set_buffer_sizes({0, 256});
    program = p.finish();
  }
};

int g_irqs = 0;  // the virtual U55's raise_irq: counts, then runs the handler as a pended IRQ
void count_and_handle_irq() {
  ++g_irqs;
  ethosu::handle_npu_irq();
}

void put_u64(Bytes& b, uint64_t v) {
  put_u32(b, static_cast<uint32_t>(v));
  put_u32(b, static_cast<uint32_t>(v >> 32));
}

bool is_regs(const Response& r) { return r.kind == hostlink::kNpuRegs && r.flags == 0; }

// The driver on a board without the NPU, its registers on this link's virtual U55.
struct VirtualRig {
  Link& link;
  Delegated delegated;
  int8_t input[16];
  explicit VirtualRig(Link& l) : link(l) {
    rt::clear_backends();
    ethosu::register_backend(
        link.server_.virtual_u55_platform(test::absent_npu_platform(), count_and_handle_irq));
    link.server_.set_clock(fake_clock);
    for (int i = 0; i < 16; ++i) input[i] = static_cast<int8_t>(5 * i - 40);
    g_irqs = 0;
  }
  ~VirtualRig() {
    link.transport_.host = nullptr;
    ethosu::unregister_platform();
    rt::clear_backends();
  }
  void set_input() {
    Bytes p = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Char), {16}, 16, 0);
    p.insert(p.end(), reinterpret_cast<const uint8_t*>(input),
             reinterpret_cast<const uint8_t*>(input) + 16);
    CHECK_EQ(link.request(hostlink::kSetInput, p).kind, hostlink::kSetInput);
  }
  // A request the scripted host queues (new seq, the link's session).
  void queue(uint8_t kind, const Bytes& payload, uint32_t session = kSession) {
    Bytes w = wire(kind, ++link.seq_, session, payload);
    link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
  }
  void queue_memory(uint8_t kind, uint64_t address, uint32_t length) {
    Bytes p;
    put_u64(p, address);
    put_u32(p, length);
    queue(kind, p);
  }
  void queue_write(uint64_t address, const Bytes& data) {
    Bytes p;
    put_u64(p, address);
    p.insert(p.end(), data.begin(), data.end());
    queue(hostlink::kNpuWrite, p);
  }
  void queue_done(uint32_t value, uint8_t irq) {
    Bytes p;
    put_u32(p, value);
    p.push_back(irq);
    p.resize(8, 0);
    queue(hostlink::kNpuDone, p);
  }
};

// A host's U55 model in miniature: registers, RESET, CMD run -> the NPU's work (hash the
// command stream, read the input at BASEP1, write in ^ 0x5A at BASEP1 + 16), the IRQ line.
struct MiniU55 {
  VirtualRig& rig;
  std::map<uint32_t, uint32_t> regs;
  bool irq = false;
  int starts = 0;
  std::vector<Response> exchanges;
  Bytes stream_hash;
  explicit MiniU55(VirtualRig& r) : rig(r) { reset(); }
  void reset() {
    uint32_t prot = regs[ethosu::reg::RESET] & 3;
    regs.clear();
    regs[ethosu::reg::ID] = 0x10066001;
    regs[ethosu::reg::CONFIG] = 0x1807;
    regs[ethosu::reg::CMD] = 0xC;
    regs[ethosu::reg::PROT] = prot;
    irq = false;
  }
  uint64_t reg64(uint32_t low) { return regs[low] | (static_cast<uint64_t>(regs[low + 4]) << 32); }
  uint64_t scratch() { return reg64(ethosu::reg::BASEP0 + 8); }
  void attach() {
    rig.link.transport_.host = [this](const Response& r) { on(r); };
  }
  void on(const Response& r) {
    if (is_regs(r)) {
      exchanges.push_back(r);
      size_t writes = u16(r.payload, 2);
      bool started = false;
      for (size_t i = 0; i < writes; ++i) {
        uint32_t offset = u32(r.payload, 8 + 8 * i);
        uint32_t value = u32(r.payload, 12 + 8 * i);
        regs[offset] = value;
        if (offset == ethosu::reg::RESET) reset();
        if (offset == ethosu::reg::CMD && (value & ethosu::cmd::kClearIrq) != 0) {
          irq = false;
          regs[ethosu::reg::STATUS] &= ~ethosu::status::kIrqRaised;
        }
        if (offset == ethosu::reg::CMD && (value & ethosu::cmd::kRun) != 0) started = true;
        regs[ethosu::reg::CMD] &= 0xC;
      }
      pending_read = u32(r.payload, 4);
      if (started && on_start) {
        ++starts;
        on_start();
      } else if (started) {
        ++starts;
        rig.queue_memory(hostlink::kNpuHash, reg64(ethosu::reg::QBASE0), regs[ethosu::reg::QSIZE]);
      } else {
        answer();
      }
    } else if (r.kind == hostlink::kNpuHash && r.flags == hostlink::kFlagResponse) {
      stream_hash = r.payload;
      rig.queue_memory(hostlink::kNpuRead, scratch(), 16);
    } else if (r.kind == hostlink::kNpuRead && r.flags == hostlink::kFlagResponse) {
      Bytes out(r.payload);
      for (uint8_t& b : out) b ^= 0x5A;
      rig.queue_write(scratch() + 16, out);
    } else if (r.kind == hostlink::kNpuWrite && r.flags == hostlink::kFlagResponse) {
      regs[ethosu::reg::STATUS] = ethosu::status::kCmdEndReached | ethosu::status::kIrqRaised;
      irq = true;
      answer();
    }
  }
  void answer() {
    uint32_t value = pending_read == contract::kNpuNoRead ? 0 : regs[pending_read];
    rig.queue_done(value, irq ? 1 : 0);
  }
  uint32_t pending_read = contract::kNpuNoRead;
  std::function<void()> on_start;  // the NPU's work instead of the model's (tests that misbehave)
};

Bytes xor_5a(const int8_t* in) {
  Bytes out(16);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<uint8_t>(in[i]) ^ 0x5A;
  return out;
}

Bytes output_bytes(Link& link) {
  Response out = link.get_output(0, 0, 16);
  return out.payload.size() >= 64 ? Bytes(out.payload.begin() + 48, out.payload.end()) : Bytes{};
}

}  // namespace

TEST(server_runs_the_unchanged_driver_through_register_exchanges) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  // The backend's init probes ID and CONFIG: two exchanges inside the LOAD_END.
  Response loaded = link.load(rig.delegated.program);
  CHECK_EQ(loaded.kind, hostlink::kLoadEnd);
  CHECK_EQ(npu.exchanges.size(), 2);
  CHECK(npu.exchanges.size() == 2 && npu.exchanges[0].seq == loaded.seq);
  CHECK(npu.exchanges.size() == 2 && u32(npu.exchanges[0].payload, 4) == ethosu::reg::ID);
  CHECK(npu.exchanges.size() == 2 && u16(npu.exchanges[1].payload, 0) == 1);  // numbered
  rig.set_input();
  npu.exchanges.clear();
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(npu.starts, 1);
  CHECK_EQ(g_irqs, 1);  // one rising edge, one interrupt
  for (const Response& e : npu.exchanges) CHECK_EQ(e.seq, r.seq);
  CHECK(output_bytes(link) == xor_5a(rig.input));
  // The hash of the command stream the driver queued is the payload's, computed in place.
  uint8_t sha[32];
  Bytes stream;  // the standard payload's COMMAND_STREAM words
  for (uint32_t word : {0x00010002u, 0x12345678u, 0xFFFF0000u}) put_u32(stream, word);
  hostlink::sha256(stream.data(), stream.size(), sha);
  CHECK(npu.stream_hash == Bytes(sha, sha + 32));
  CHECK(u64(r.payload, 32) <= u64(r.payload, 8));  // virtual_npu_ticks: part of the total
  // Two iterations: two starts, two interrupts; the kept RUN answer runs nothing again.
  r = link.run(2);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(npu.starts, 3);
  CHECK_EQ(g_irqs, 3);
  Bytes iterations;
  put_u32(iterations, 2);
  Response again = link.request_seq(hostlink::kRun, r.seq, iterations);
  CHECK(again.kind == hostlink::kRun && again.payload == r.payload);
  CHECK_EQ(npu.starts, 3);
  CHECK(!link.server_.npu_exchange_open());
}

Bytes npu_write_file_request(uint64_t address, uint32_t length, const std::string& name) {
  Bytes p;
  put_u64(p, address);
  put_u32(p, length);
  put_u16(p, static_cast<uint16_t>(name.size()));
  put_u16(p, 0);
  p.insert(p.end(), name.begin(), name.end());
  return p;
}

TEST(server_u55_memory_requests_are_bounds_checked_and_others_refused) {
  char dir[] = "/tmp/server_test_npu.XXXXXX";
  CHECK(mkdtemp(dir) != nullptr);
  std::string file = std::string(dir) + "/w.bin";
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  link.load(rig.delegated.program);
  rig.set_input();
  const Bytes out = xor_5a(rig.input);
  const uint32_t n = static_cast<uint32_t>(out.size());
  FILE* f = fopen(file.c_str(), "wb");
  CHECK(f != nullptr);
  if (f) {
    fwrite(out.data(), 1, out.size(), f);
    fclose(f);
  }
  host_platform_file_dir(nullptr);
  std::vector<ErrorInfo> errors;
  Bytes file_reply;
  int step = -1;  // -1: the model answers; from 0: the script below does the NPU's work
  const uint64_t scratch = reinterpret_cast<uintptr_t>(g_scratch);
  auto next = [&]() {
    switch (step++) {
      case 0: rig.queue_memory(hostlink::kNpuRead, 16, 4); break;          // address 16
      case 1: rig.queue_memory(hostlink::kNpuRead, scratch + 4090, 16); break;  // passes
      case 2: rig.queue_memory(hostlink::kNpuRead, scratch, 5000); break;  // more than a frame
      case 3: rig.queue_write(~0ull - 3, Bytes(16, 1)); break;             // wraps
      case 4: rig.queue_memory(hostlink::kNpuHash, 0x58102000, 4); break;  // the NPU's registers
      case 5: rig.queue(hostlink::kInfo, {}); break;                       // not an NPU request
      case 6: rig.queue(hostlink::kRun, Bytes{1, 0, 0, 0}); break;  // a new RUN, not a resend
      case 7: rig.queue(hostlink::kNpuRead, Bytes(12, 0), kSession + 1); break;  // stale session
      case 8: rig.queue(hostlink::kNpuDone, {0, 0, 0, 0, 2, 0, 0, 0}); break;  // irq 2
      case 9: rig.queue(hostlink::kNpuRead, {0, 0}); break;                  // short
      case 10: rig.queue_memory(hostlink::kNpuRead, scratch, 16); break;      // in bounds
      case 11: rig.queue(hostlink::kNpuWriteFile, npu_write_file_request(16, 4, "w.bin")); break;
      case 12: rig.queue(hostlink::kNpuWriteFile, npu_write_file_request(scratch + 16, n, "../w")); break;
      case 13: rig.queue(hostlink::kNpuWriteFile, npu_write_file_request(scratch + 16, n, "w.bin")); break;
      case 14:  // from here the host build reads files in `dir`, as QEMU in its folder
        host_platform_file_dir(dir);
        rig.queue(hostlink::kNpuWriteFile, npu_write_file_request(scratch + 16, n + 1, "w.bin"));
        break;
      case 15: rig.queue(hostlink::kNpuWriteFile, npu_write_file_request(scratch + 16, n, "w.bin")); break;
      default:  // the NPU is done: the model answers the start and the rest
        step = -1;
        npu.regs[ethosu::reg::STATUS] = ethosu::status::kCmdEndReached | ethosu::status::kIrqRaised;
        npu.irq = true;
        npu.answer();
        break;
    }
  };
  npu.on_start = [&]() {
    step = 0;
    next();
  };
  link.transport_.host = [&](const Response& r) {
    if (r.kind == hostlink::kError) errors.push_back(error_of(r));
    if (r.kind == hostlink::kNpuWriteFile) file_reply = r.payload;
    if (step < 0) {
      npu.on(r);
    } else if (r.flags == hostlink::kFlagResponse) {
      next();
    }
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(errors.size(), 14);
  if (errors.size() == 14) {
    CHECK(errors[0].name == "InvalidArgument" &&
          has(errors[0].reason, "NPU_READ of 4 bytes at 0x00000000_00000010: outside the memory "
                                "the NPU may reach"));
    CHECK(errors[1].name == "InvalidArgument");
    CHECK(errors[2].name == "BadMessage" && has(errors[2].reason, "at most 4096 per request"));
    CHECK(errors[3].name == "InvalidArgument" && has(errors[3].reason, "the NPU may write"));
    CHECK(errors[4].name == "InvalidArgument" && has(errors[4].reason, "NPU_HASH of 4 bytes"));
    CHECK(has(errors[5].reason, "INFO: a virtual U55 exchange is open"));
    CHECK_EQ(errors[5].kind, hostlink::kInfo);
    CHECK(has(errors[6].reason, "RUN: a virtual U55 exchange is open"));
    CHECK(has(errors[7].reason, "session"));
    CHECK(has(errors[8].reason, "NPU_DONE irq 2"));
    CHECK(has(errors[9].reason, "NPU_READ payload is 2 bytes, expected 12"));
    CHECK(errors[10].name == "InvalidArgument" &&
          has(errors[10].reason, "NPU_WRITE_FILE of 4 bytes at 0x00000000_00000010: outside"));
    CHECK(errors[11].name == "BadMessage" && has(errors[11].reason, "not one of [A-Za-z0-9._-]"));
    CHECK(errors[12].name == "NotSupported" && has(errors[12].reason, "no semihosting"));
    CHECK(errors[13].name == "InvalidArgument" &&
          has(errors[13].reason, "'w.bin' does not hold exactly"));
  }
  CHECK_EQ(file_reply.size(), 8);
  if (file_reply.size() == 8) {
    CHECK_EQ(u32(file_reply, 0), n);
    CHECK_EQ(u32(file_reply, 4), runner::crc32(out.data(), out.size()));
  }
  CHECK(output_bytes(link) == out);
  host_platform_file_dir(nullptr);
  unlink(file.c_str());
  rmdir(dir);
}

TEST(server_u55_retransmissions_resend_the_exchange_or_the_kept_answer) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  link.load(rig.delegated.program);
  rig.set_input();
  int announcements = 0;
  int reads = 0;
  uint16_t run_seq = static_cast<uint16_t>(link.seq_ + 1);
  link.transport_.host = [&](const Response& r) {
    if (is_regs(r) && ++announcements == 1) {
      // The first NPU_REGS was "lost": the host retransmits its RUN and gets it again.
      Bytes w = wire(hostlink::kRun, run_seq, kSession, Bytes{1, 0, 0, 0});
      link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      return;
    }
    if (r.kind == hostlink::kNpuRead && r.flags == hostlink::kFlagResponse && ++reads == 1) {
      // The answer was "lost": the same NPU_READ again gets the kept answer.
      Bytes p;
      put_u64(p, npu.scratch());
      put_u32(p, 16);
      Bytes w = wire(hostlink::kNpuRead, link.seq_, kSession, p);
      link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      return;
    }
    npu.on(r);
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(r.seq, run_seq);
  CHECK_EQ(reads, 2);
  CHECK_EQ(npu.starts, 1);
  CHECK(output_bytes(link) == xor_5a(rig.input));
}

TEST(server_u55_a_retransmitted_done_never_ends_the_next_exchange) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  link.load(rig.delegated.program);
  rig.set_input();
  int announcements = 0;
  uint16_t first_done_seq = 0;
  int dones = 0;
  Response pending;
  link.transport_.host = [&](const Response& r) {
    if (is_regs(r) && ++announcements == 2) {
      // Exchange 0's NPU_DONE answer was "lost": the host sends it again during exchange 1.
      Bytes p = {0, 0, 0, 0, 0, 0, 0, 0};
      Bytes w = wire(hostlink::kNpuDone, first_done_seq, kSession, p);
      link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      pending = r;
      return;
    }
    if (r.kind == hostlink::kNpuDone && r.flags == hostlink::kFlagResponse) {
      if (first_done_seq == 0) first_done_seq = r.seq;
      if (++dones == 2) npu.on(pending);  // the answer again: now exchange 1 for real
      return;
    }
    npu.on(r);
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK(output_bytes(link) == xor_5a(rig.input));
  CHECK_EQ(npu.starts, 1);
}

TEST(server_u55_reannounces_after_a_quiet_second_and_gives_up_after_a_minute) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  link.load(rig.delegated.program);
  rig.set_input();
  int announcements = 0;
  link.transport_.host = [&](const Response& r) {
    if (is_regs(r) && ++announcements < 3) return;  // the first exchange: third time answered
    npu.on(r);
  };
  g_now = 0;
  CHECK_EQ(link.run(1).kind, hostlink::kRun);
  CHECK(g_now >= 2000000000ull && g_now < 3000000000ull);  // two quiet seconds
  CHECK(output_bytes(link) == xor_5a(rig.input));
  // A host that never answers: announced about once a second, then the exchange fails at
  // 60 s; the driver's later register accesses fail at once, and the error says why.
  announcements = 0;
  link.transport_.host = [&](const Response& r) { announcements += is_regs(r) ? 1 : 0; };
  g_now = 0;
  ErrorInfo e = error_of(link.run(1));
  CHECK(e.name == "NoHardware");  // the first read (ID) came back 0, as from an absent NPU
  CHECK(has(e.reason, "the virtual U55: the host did not answer NPU_REGS"));
  CHECK(!has(e.reason, "closed"));
  CHECK_EQ(announcements, 60);  // at 0 s, then 1 s .. 59 s
  CHECK(g_now >= 60000000000ull && g_now < 60200000000ull);
  CHECK(!link.server_.npu_exchange_open());
}

TEST(server_u55_ticks_and_a_closed_link) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  MiniU55 npu(rig);
  npu.attach();
  link.connect();
  link.load(rig.delegated.program);
  rig.set_input();
  g_now = 0;
  link.transport_.host = [&](const Response& r) {
    if (is_regs(r)) g_now += 1000000;  // the host takes 1 ms per exchange
    npu.on(r);
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK(u64(r.payload, 32) >= 1000000ull * npu.exchanges.size() / 2);
  // No host at all (the transport closed): the first exchange fails at once, saying so.
  link.transport_.host = nullptr;
  ErrorInfo e = error_of(link.run(1));
  CHECK(has(e.reason, "the host did not answer NPU_REGS (the link closed)"));
}

TEST(server_u55_outside_a_request_reads_as_an_absent_npu) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  ethosu::NpuPlatform p =
      link.server_.virtual_u55_platform(test::absent_npu_platform(), count_and_handle_irq);
  link.transport_.out.clear();
  CHECK_EQ(p.read32(p.ctx, ethosu::reg::ID), 0);  // no request is being served: no host
  CHECK(link.transport_.out.empty());               // nothing was sent
  // A LOAD with a host that answers nothing NPU-like: the absent NPU's NoHardware.
  link.connect();
  ErrorInfo e = error_of(link.load(rig.delegated.program));
  CHECK(e.name == "NoHardware" && has(e.reason, "no Ethos-U55 at 0x58102000 on this board"));
  CHECK(has(e.reason, "the virtual U55: the host did not answer NPU_REGS (the link closed)"));
}
