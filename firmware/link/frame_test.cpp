// Frames: build and parse, every rejection with its NAK reason, and the stream deframer.
#include <string.h>

#include <vector>

#include "frame.h"
#include "console.h"
#include "test_harness.h"

using hostlink::Deframer;
using hostlink::Frame;
using hostlink::NakReason;
using Bytes = std::vector<uint8_t>;

namespace {

Bytes body(uint8_t kind, uint16_t seq, uint32_t session, const Bytes& payload, uint8_t flags = 0) {
  Bytes b(hostlink::kMinBody + payload.size());
  size_t n = hostlink::build_body(kind, seq, session, flags, payload.data(), payload.size(),
                                  b.data(), b.size());
  b.resize(n);
  return b;
}

void fix_crc(Bytes& b) {
  uint32_t crc = runner::crc32(b.data(), b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

bool rejected_with(const Bytes& b, NakReason expected) {
  Frame f;
  NakReason why = NakReason::Crc;
  return !hostlink::parse_body(b.data(), b.size(), &f, &why) && why == expected;
}

Bytes wire(const Bytes& b) {
  Bytes w(hostlink::kMaxWire);
  w.resize(hostlink::encode_wire(b.data(), b.size(), w.data(), w.size()));
  return w;
}

struct Pushed {
  std::vector<Bytes> bodies;
  std::vector<NakReason> dropped;
};

Pushed push_all(Deframer& d, const Bytes& stream) {
  Pushed out;
  for (uint8_t byte : stream) {
    NakReason why = NakReason::Crc;
    Deframer::Event e = d.push(byte, &why);
    if (e == Deframer::Event::Body) {
      out.bodies.emplace_back(d.body(), d.body() + d.body_size());
    } else if (e == Deframer::Event::Dropped) {
      out.dropped.push_back(why);
    }
  }
  return out;
}

Deframer g_deframer;  // 8 KiB: not on the stack

}  // namespace

TEST(frame_build_and_parse_round_trip) {
  Bytes payload = {1, 2, 0, 4};
  Bytes b = body(0x30, 0x1234, 0xA1B2C3D4, payload, hostlink::kFlagResponse);
  CHECK_EQ(b.size(), 20);
  CHECK_EQ(b[0], 1);
  CHECK_EQ(b[8], 4);
  Frame f;
  NakReason why;
  CHECK(hostlink::parse_body(b.data(), b.size(), &f, &why));
  CHECK_EQ(f.kind, 0x30);
  CHECK_EQ(f.seq, 0x1234);
  CHECK_EQ(f.session, 0xA1B2C3D4u);
  CHECK_EQ(f.flags, 1);
  CHECK_EQ(f.length, 4);
  CHECK(memcmp(f.payload, payload.data(), 4) == 0);
}

TEST(frame_the_largest_payload_fits_and_one_more_byte_does_not) {
  Bytes big(hostlink::kMaxPayload, 0xAB);
  Bytes b = body(0x11, 1, 2, big);
  CHECK_EQ(b.size(), hostlink::kMaxBody);
  Frame f;
  NakReason why;
  CHECK(hostlink::parse_body(b.data(), b.size(), &f, &why));
  Bytes out(hostlink::kMaxBody + 1);
  CHECK_EQ(hostlink::build_body(1, 1, 1, 0, big.data(), big.size() + 1, out.data(), out.size()), 0);
  Bytes w = wire(b);
  CHECK(!w.empty() && w.size() <= hostlink::kMaxWire);
}

TEST(frame_every_rejection_has_its_reason) {
  Bytes good = body(0x03, 7, 9, {5, 6});
  CHECK(rejected_with(Bytes(good.begin(), good.begin() + 15), NakReason::TooShort));
  CHECK(rejected_with(Bytes(hostlink::kMaxBody + 1, 1), NakReason::TooLong));
  Bytes crc = good;
  crc[12] ^= 1;
  CHECK(rejected_with(crc, NakReason::Crc));
  Bytes version = good;
  version[0] = 2;
  fix_crc(version);
  CHECK(rejected_with(version, NakReason::BadHeader));
  Bytes length = good;
  length[8] = 3;
  fix_crc(length);
  CHECK(rejected_with(length, NakReason::BadHeader));
  Bytes flags = good;
  flags[10] = 0x02;
  fix_crc(flags);
  CHECK(rejected_with(flags, NakReason::BadHeader));
  Bytes reserved = good;
  reserved[11] = 1;
  fix_crc(reserved);
  CHECK(rejected_with(reserved, NakReason::BadHeader));
}

TEST(deframer_takes_frames_split_anywhere_and_ignores_empty_ones) {
  Bytes a = body(0x02, 1, 0, {0, 0, 0, 0});
  Bytes b = body(0x03, 2, 0, {});
  Bytes stream = {0, 0, 0};
  Bytes wa = wire(a);
  Bytes wb = wire(b);
  stream.insert(stream.end(), wa.begin(), wa.end());
  stream.insert(stream.end(), wb.begin(), wb.end());
  g_deframer.clear();
  Pushed got = push_all(g_deframer, stream);
  CHECK_EQ(got.bodies.size(), 2);
  CHECK(got.dropped.empty());
  CHECK(got.bodies[0] == a);
  CHECK(got.bodies[1] == b);
}

TEST(deframer_console_text_before_a_frame_is_one_dropped_frame) {
  Bytes stream = {'h', 'i', '\n'};
  Bytes a = body(0x03, 2, 0, {});
  Bytes wa = wire(a);
  stream.insert(stream.end(), wa.begin(), wa.end());
  g_deframer.clear();
  Pushed got = push_all(g_deframer, stream);
  CHECK_EQ(got.dropped.size(), 1);  // "hi\n" is no COBS ('h' promises 103 bytes)
  CHECK(got.dropped[0] == NakReason::Cobs);
  CHECK_EQ(got.bodies.size(), 1);
  CHECK(got.bodies[0] == a);
}

TEST(deframer_drops_an_overlong_frame_and_recovers) {
  Bytes stream = {0};
  stream.insert(stream.end(), hostlink::kMaxEncoded + 10, 0x42);
  stream.push_back(0);
  Bytes a = body(0x03, 3, 0, {});
  Bytes wa = wire(a);
  stream.insert(stream.end(), wa.begin(), wa.end());
  g_deframer.clear();
  Pushed got = push_all(g_deframer, stream);
  CHECK_EQ(got.dropped.size(), 1);
  CHECK(got.dropped[0] == NakReason::TooLong);
  CHECK_EQ(got.bodies.size(), 1);
  CHECK(got.bodies[0] == a);
}

TEST(deframer_reports_bad_cobs) {
  g_deframer.clear();
  Pushed got = push_all(g_deframer, {0, 0x05, 0x11, 0});  // code runs past the end
  CHECK_EQ(got.dropped.size(), 1);
  CHECK(got.dropped[0] == NakReason::Cobs);
}
