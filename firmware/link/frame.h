// Link frames (docs/link.md "Frames"): the body (header, payload, CRC-32), its COBS encoding
// between 0x00 delimiters, and the byte-stream deframer.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cobs.h"
#include "contract.h"  // generated from firmware/contract.yaml: kinds, layouts, the version

namespace hostlink {

using namespace contract;  // NOLINT: the contract's names are the link's

constexpr size_t kHeaderSize = kFrameHeaderSize;
constexpr size_t kCrcSize = kFrameTrailerSize;
constexpr size_t kMinBody = kHeaderSize + kCrcSize;
constexpr size_t kMaxBody = kHeaderSize + kMaxPayload + kCrcSize;
constexpr size_t kMaxEncoded = cobs_max_encoded(kMaxBody);
constexpr size_t kMaxWire = kMaxEncoded + 2;  // with both delimiters

// Little-endian fields of frames and payloads.
inline uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void put_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void put_u64(uint8_t* p, uint64_t v) {
  put_u32(p, static_cast<uint32_t>(v));
  put_u32(p + 4, static_cast<uint32_t>(v >> 32));
}
inline uint64_t get_u64(const uint8_t* p) {
  return get_u32(p) | (static_cast<uint64_t>(get_u32(p + 4)) << 32);
}

struct Frame {
  uint8_t kind;
  uint16_t seq;
  uint32_t session;
  uint8_t flags;
  const uint8_t* payload;  // inside the body it was parsed from
  size_t length;
};

// Check a decoded body (size, CRC, version, length field, reserved bits) and describe it.
// False with *why set when the frame must be dropped.
bool parse_body(const uint8_t* body, size_t size, Frame* frame, NakReason* why);

// Write the body of a frame into `out` (room for kHeaderSize + length + kCrcSize). The payload
// may already sit at out + kHeaderSize (then `payload` is that pointer). Returns its size;
// 0 when length > kMaxPayload or it does not fit.
size_t build_body(uint8_t kind, uint16_t seq, uint32_t session, uint8_t flags,
                  const uint8_t* payload, size_t length, uint8_t* out, size_t capacity);

// 0x00, COBS(body), 0x00 into `out`; returns the wire size, 0 when it does not fit.
size_t encode_wire(const uint8_t* body, size_t size, uint8_t* out, size_t capacity);

// Turns a byte stream into bodies. Bytes between two 0x00 are one encoded frame; an empty one
// is ignored; one longer than any valid frame stops being stored as soon as it overflows.
class Deframer {
 public:
  enum class Event : uint8_t { None, Body, Dropped };

  // Take one byte. Body: body()/body_size() hold the decoded frame until the next push.
  // Dropped: *why says why (TooLong, Cobs).
  Event push(uint8_t byte, NakReason* why);
  const uint8_t* body() const { return buffer_; }
  size_t body_size() const { return body_size_; }
  void clear() {
    size_ = 0;
    overflowed_ = false;
  }

 private:
  uint8_t buffer_[kMaxEncoded];  // encoded bytes, decoded in place at the delimiter
  size_t size_ = 0;
  size_t body_size_ = 0;
  bool overflowed_ = false;
};

}  // namespace hostlink
