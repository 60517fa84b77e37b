// The link server driven with encoded frames in memory through a fake transport.
#include <string.h>

#include <functional>
#include <string>
#include <vector>

#include "backend.h"
#include "frame.h"
#include "npu_absent.h"
#include "record.h"
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
  put_u32(header, runner::kProgramMagic);
  put_u32(header, runner::kBlobVersion);
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

// ---- The virtual NPU (docs/link.md "Virtual NPU") ----------------------------------------

namespace {

// in (Char [16]) -> EthosUBackend -> out (Char [16]): the standard Vela payload (input at
// scratch offset 0, output at 16, scratch 32).
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

// The backend on a board without the NPU, with this link's server as its virtual NPU.
struct VirtualRig {
  Link& link;
  Delegated delegated;
  int8_t input[16];
  explicit VirtualRig(Link& l) : link(l) {
    rt::clear_backends();
    ethosu::register_backend(test::absent_npu_platform());
    ethosu::set_virtual_npu(&link.server_.virtual_npu());
    link.server_.set_clock(fake_clock);
    for (int i = 0; i < 16; ++i) input[i] = static_cast<int8_t>(5 * i - 40);
  }
  ~VirtualRig() {
    link.transport_.host = nullptr;
    ethosu::set_virtual_npu(nullptr);
    ethosu::unregister_platform();
    rt::clear_backends();
  }
  Response load_and_set() {
    link.connect();
    Response r = link.load(delegated.program);
    if (r.kind != hostlink::kLoadEnd) return r;
    Bytes p = Link::tensor_header(0, static_cast<uint8_t>(ScalarType::Char), {16}, 16, 0);
    p.insert(p.end(), reinterpret_cast<const uint8_t*>(input),
             reinterpret_cast<const uint8_t*>(input) + 16);
    return link.request(hostlink::kSetInput, p);
  }
  // A request the scripted host queues (new seq, the link's session).
  void queue(uint8_t kind, const Bytes& payload, uint32_t session = kSession) {
    Bytes w = wire(kind, ++link.seq_, session, payload);
    link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
  }
  void queue_read(uint32_t offset, uint32_t length) {
    Bytes p;
    put_u32(p, offset);
    put_u32(p, length);
    queue(hostlink::kNpuRead, p);
  }
  void queue_write(uint32_t offset, const Bytes& data) {
    Bytes p;
    put_u32(p, offset);
    p.insert(p.end(), data.begin(), data.end());
    queue(hostlink::kNpuWrite, p);
  }
  void queue_done(bool ok, const char* reason = "") {
    Bytes p = {static_cast<uint8_t>(ok ? 0 : 1), 0, 0, 0};
    p.insert(p.end(), reason, reason + strlen(reason));
    queue(hostlink::kNpuDone, p);
  }
};

bool is_job(const Response& r) { return r.kind == hostlink::kNpuJob && r.flags == 0; }

// The NPU's work as the host's executor would do it: out = in ^ 0x5A.
Bytes xor_5a(const Bytes& in) {
  Bytes out(in);
  for (uint8_t& b : out) b ^= 0x5A;
  return out;
}

// A well-behaved host: READ the input, WRITE the output, DONE ok, for every job.
void honest_host(VirtualRig& rig, std::vector<Response>* jobs = nullptr) {
  rig.link.transport_.host = [&rig, jobs](const Response& r) {
    if (is_job(r)) {
      if (jobs != nullptr) jobs->push_back(r);
      rig.queue_read(0, 16);
    } else if (r.kind == hostlink::kNpuRead && r.payload.size() == 16) {
      rig.queue_write(16, xor_5a(r.payload));
    } else if (r.kind == hostlink::kNpuWrite) {
      rig.queue_done(true);
    }
  };
}

}  // namespace

TEST(server_runs_a_delegate_through_a_virtual_npu_job) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  CHECK_EQ(rig.load_and_set().kind, hostlink::kSetInput);
  std::vector<Response> jobs;
  honest_host(rig, &jobs);
  Response r = link.run(1);
  uint16_t run_seq = 0;
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(r.payload.size(), 40);
  CHECK_EQ(jobs.size(), 1);
  run_seq = r.seq;
  const Response& job = jobs[0];
  CHECK_EQ(job.seq, run_seq);
  CHECK_EQ(job.session, kSession);
  CHECK_EQ(job.payload.size(), 40);
  CHECK_EQ(u16(job.payload, 0), 0);   // delegate 0
  CHECK_EQ(u16(job.payload, 2), 0);   // job 0 of this RUN
  CHECK_EQ(u32(job.payload, 4), 32);  // the NPU's scratch
  uint8_t sha[32];
  hostlink::sha256(rig.delegated.payload.data(), rig.delegated.payload.size(), sha);
  CHECK(memcmp(job.payload.data() + 8, sha, 32) == 0);
  // virtual_npu_ticks: part of the total.
  CHECK(u64(r.payload, 32) <= u64(r.payload, 8));
  Response out = link.get_output(0, 0, 16);
  CHECK_EQ(out.kind, hostlink::kGetOutput);
  for (int i = 0; i < 16; ++i) {
    CHECK_EQ(out.payload[48 + i], static_cast<uint8_t>(rig.input[i]) ^ 0x5A);
  }
  // Two iterations: two jobs of one RUN, numbered 0 and 1, both with its seq.
  jobs.clear();
  r = link.run(2);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(jobs.size(), 2);
  CHECK(jobs.size() == 2 && jobs[0].seq == r.seq && jobs[1].seq == r.seq);
  CHECK(jobs.size() == 2 && u16(jobs[0].payload, 2) == 0 && u16(jobs[1].payload, 2) == 1);
  CHECK_EQ(link.server_.runs(), 3);
  // The kept response is the RUN's own: a retransmission gets it, and no job runs.
  jobs.clear();
  Bytes iterations;
  put_u32(iterations, 2);
  Response again = link.request_seq(hostlink::kRun, r.seq, iterations);
  CHECK_EQ(again.kind, hostlink::kRun);
  CHECK(again.payload == r.payload);
  CHECK_EQ(jobs.size(), 0);
  CHECK_EQ(link.server_.runs(), 3);
  CHECK(!link.server_.npu_job_open());
}

TEST(server_virtual_npu_failure_is_delegate_failed_with_the_hosts_reason) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  link.transport_.host = [&rig](const Response& r) {
    if (is_job(r)) rig.queue_done(false, "tosa reference model: bad \"shape\"\x01");
  };
  ErrorInfo e = error_of(link.run(1));
  CHECK(e.name == "DelegateFailed");
  CHECK_EQ(e.kind, hostlink::kRun);
  CHECK(has(e.reason, "instruction 0 (delegate 0, EthosUBackend): virtual NPU: tosa reference "
                      "model: bad 'shape'?"));
  CHECK(error_of(link.get_output(0, 0, 16)).name == "BadMessage");  // no passed RUN
  // The host lost the NPU_DONE's answer: its retransmission is answered again, after the RUN.
  Response done = link.request_seq(hostlink::kNpuDone, static_cast<uint16_t>(link.seq_ - 1),
                                   {1, 0, 0, 0});
  CHECK_EQ(done.kind, hostlink::kNpuDone);
  CHECK_EQ(done.payload.size(), 0);
  // Outside a job, the NPU requests are refused.
  ErrorInfo outside = error_of(link.request(hostlink::kNpuRead, Bytes(8, 0)));
  CHECK(outside.name == "BadMessage" && has(outside.reason, "no virtual NPU job is running"));
  outside = error_of(link.request(hostlink::kNpuJob, {}));
  CHECK(outside.name == "BadMessage" && has(outside.reason, "NPU_JOB comes from the firmware"));
}

TEST(server_virtual_npu_requests_are_bounds_checked_and_others_refused) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  std::vector<ErrorInfo> errors;
  int step = 0;
  link.transport_.host = [&](const Response& r) {
    if (r.kind == hostlink::kError) errors.push_back(error_of(r));
    if (!is_job(r) && r.flags != hostlink::kFlagResponse) return;
    switch (step++) {
      case 0: rig.queue_read(30, 3); break;                 // passes 32
      case 1: rig.queue_read(0xFFFFFFF0u, 0x20); break;     // wraps
      case 2: rig.queue_read(0, 5000); break;               // more than a frame
      case 3: rig.queue_write(17, Bytes(16, 1)); break;     // passes 32
      case 4: rig.queue_write(0xFFFFFFFFu, Bytes(2, 1)); break;
      case 5: rig.queue(hostlink::kInfo, {}); break;        // not a job request
      case 6: rig.queue(hostlink::kGetOutput, Bytes(12, 0)); break;
      case 7: rig.queue(hostlink::kRun, Bytes{1, 0, 0, 0}); break;  // a new RUN, not a resend
      case 8: rig.queue(hostlink::kNpuRead, Bytes(8, 0), kSession + 1); break;  // stale session
      case 9: rig.queue(hostlink::kNpuDone, {2, 0, 0, 0}); break;  // status 2
      case 10: rig.queue(hostlink::kNpuRead, {0, 0}); break;       // short
      case 11: rig.queue_read(16, 16); break;               // in bounds: the output's place
      case 12: rig.queue_write(16, xor_5a(Bytes(rig.input, rig.input + 16))); break;
      case 13: rig.queue_done(true); break;
      default: break;
    }
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(errors.size(), 11);
  for (const ErrorInfo& e : errors) CHECK(e.name == "BadMessage");
  if (errors.size() == 11) {
    CHECK(has(errors[0].reason, "NPU_READ of 3 bytes at offset 30 passes the 32-byte scratch"));
    CHECK(has(errors[1].reason, "passes the 32-byte scratch"));
    CHECK(has(errors[2].reason, "at most 4096 per request"));
    CHECK(has(errors[3].reason, "NPU_WRITE of 16 bytes at offset 17 passes the 32-byte scratch"));
    CHECK(has(errors[4].reason, "passes the 32-byte scratch"));
    CHECK(has(errors[5].reason, "INFO: a virtual NPU job is running"));
    CHECK_EQ(errors[5].kind, hostlink::kInfo);
    CHECK(has(errors[6].reason, "GET_OUTPUT: a virtual NPU job is running"));
    CHECK(has(errors[7].reason, "RUN: a virtual NPU job is running"));
    CHECK(has(errors[8].reason, "session"));
    CHECK(has(errors[9].reason, "NPU_DONE status 2"));
    CHECK(has(errors[10].reason, "NPU_READ payload is 2 bytes, expected 8"));
  }
  Response out = link.get_output(0, 0, 16);
  for (int i = 0; i < 16; ++i) {
    CHECK_EQ(out.payload[48 + i], static_cast<uint8_t>(rig.input[i]) ^ 0x5A);
  }
}

TEST(server_virtual_npu_retransmissions_resend_the_job_or_the_kept_answer) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  int jobs = 0;
  int reads = 0;
  uint16_t run_seq = static_cast<uint16_t>(link.seq_ + 1);
  Bytes first_read;
  link.transport_.host = [&](const Response& r) {
    if (is_job(r)) {
      if (++jobs == 1) {
        // The announcement was "lost": the host retransmits its RUN.
        Bytes w = wire(hostlink::kRun, run_seq, kSession, Bytes{1, 0, 0, 0});
        link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      } else if (jobs == 2) {
        rig.queue_read(0, 16);
      }
    } else if (r.kind == hostlink::kNpuRead) {
      if (++reads == 1) {
        first_read = r.payload;
        // The answer was "lost": the same NPU_READ again gets the kept answer.
        Bytes p;
        put_u32(p, 0);
        put_u32(p, 16);
        Bytes w = wire(hostlink::kNpuRead, link.seq_, kSession, p);
        link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      } else {
        rig.queue_write(16, xor_5a(r.payload));
      }
    } else if (r.kind == hostlink::kNpuWrite) {
      rig.queue_done(true);
    }
  };
  Response r = link.run(1);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(r.seq, run_seq);
  CHECK_EQ(jobs, 2);
  CHECK_EQ(reads, 2);
  CHECK_EQ(first_read.size(), 16);
  CHECK_EQ(link.server_.runs(), 1);
}

TEST(server_virtual_npu_a_retransmitted_done_never_ends_the_next_job) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  int jobs = 0;
  int reads = 0;
  int dones = 0;
  uint16_t first_done_seq = 0;
  link.transport_.host = [&](const Response& r) {
    if (is_job(r)) {
      if (++jobs == 2) {
        // Job 0's DONE answer was "lost": the host sends it again during job 1.
        Bytes w = wire(hostlink::kNpuDone, first_done_seq, kSession, {0, 0, 0, 0});
        link.transport_.in.insert(link.transport_.in.end(), w.begin(), w.end());
      } else {
        rig.queue_read(0, 16);
      }
    } else if (r.kind == hostlink::kNpuRead) {
      ++reads;
      rig.queue_write(16, xor_5a(r.payload));
    } else if (r.kind == hostlink::kNpuWrite) {
      rig.queue_done(true);
      if (first_done_seq == 0) first_done_seq = link.seq_;
    } else if (r.kind == hostlink::kNpuDone) {
      if (++dones == 2) rig.queue_read(0, 16);  // the answer again: now do job 1
    }
  };
  Response r = link.run(2);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(jobs, 2);
  CHECK_EQ(reads, 2);  // job 1 ran its own READ/WRITE/DONE
  CHECK_EQ(dones, 3);
}

TEST(server_virtual_npu_reannounces_after_a_quiet_second_and_gives_up_after_a_minute) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  int jobs = 0;
  link.transport_.host = [&](const Response& r) {
    if (is_job(r) && ++jobs == 3) rig.queue_read(0, 16);  // answers the third announcement
    if (r.kind == hostlink::kNpuRead) rig.queue_write(16, xor_5a(r.payload));
    if (r.kind == hostlink::kNpuWrite) rig.queue_done(true);
  };
  g_now = 0;
  CHECK_EQ(link.run(1).kind, hostlink::kRun);
  CHECK_EQ(jobs, 3);
  CHECK(g_now >= 2000000000ull && g_now < 2500000000ull);  // two quiet seconds
  // A host that never answers: announced about once a second, then DelegateFailed at 60 s.
  jobs = 0;
  link.transport_.host = [&](const Response& r) { jobs += is_job(r) ? 1 : 0; };
  g_now = 0;
  link.transport_.out.clear();
  ErrorInfo e = error_of(link.run(1));
  CHECK(e.name == "DelegateFailed");
  CHECK(has(e.reason, "virtual NPU: the host did not answer"));
  CHECK(!has(e.reason, "closed"));
  CHECK_EQ(jobs, 60);  // at 0 s, then 1 s .. 59 s
  CHECK(g_now >= 60000000000ull && g_now < 60200000000ull);
  // A request, even a refused one, counts as an answer: the minute starts again.
  jobs = 0;
  g_now = 0;
  bool nudged = false;
  link.transport_.host = [&](const Response& r) {
    jobs += is_job(r) ? 1 : 0;
    if (is_job(r) && g_now >= 50000000000ull && !nudged) {
      nudged = true;
      rig.queue(hostlink::kInfo, {});
    }
  };
  e = error_of(link.run(1));
  CHECK(e.name == "DelegateFailed");
  CHECK(g_now >= 110000000000ull);
  CHECK(!link.server_.npu_job_open());
}

TEST(server_virtual_npu_ticks_and_a_closed_link) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  rig.load_and_set();
  g_now = 0;
  link.transport_.host = [&](const Response& r) {
    if (is_job(r)) {
      g_now += 300000000;  // the host's executor takes 300 ms
      rig.queue_read(0, 16);
    }
    if (r.kind == hostlink::kNpuRead) rig.queue_write(16, xor_5a(r.payload));
    if (r.kind == hostlink::kNpuWrite) rig.queue_done(true);
  };
  Response r = link.run(2);
  CHECK_EQ(r.kind, hostlink::kRun);
  CHECK_EQ(u64(r.payload, 32), 600000000ull);  // two jobs of 300 ms each
  // No host at all (the transport closed): the job fails at once, saying so.
  link.transport_.host = nullptr;
  ErrorInfo e = error_of(link.run(1));
  CHECK(e.name == "DelegateFailed" && has(e.reason, "the host did not answer (the link closed)"));
}

TEST(server_virtual_npu_is_not_taken_without_a_provider_or_with_an_npu) {
  Link& link = fresh_link();
  VirtualRig rig(link);
  ethosu::set_virtual_npu(nullptr);
  link.connect();
  ErrorInfo e = error_of(link.load(rig.delegated.program));
  CHECK(e.name == "NoHardware" && has(e.reason, "no Ethos-U55 at 0x58102000 on this board"));
}
