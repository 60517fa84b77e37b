// Link frames (see frame.h).
#include "frame.h"

#include <string.h>

#include "console.h"  // runner::crc32

namespace hostlink {

bool parse_body(const uint8_t* body, size_t size, Frame* frame, NakReason* why) {
  if (size < kMinBody) {
    *why = NakReason::TooShort;
    return false;
  }
  if (size > kMaxBody) {
    *why = NakReason::TooLong;
    return false;
  }
  // The CRC first: a damaged header byte is a damaged frame, reported as such.
  if (runner::crc32(body, size - kCrcSize) != get_u32(body + size - kCrcSize)) {
    *why = NakReason::Crc;
    return false;
  }
  size_t length = get_u16(body + kFrameHeaderLength);
  if (body[kFrameHeaderVersion] != kProtocolVersion || length != size - kMinBody ||
      (body[kFrameHeaderFlags] & ~kFlagResponse) != 0 || body[kFrameHeaderReserved] != 0) {
    *why = NakReason::BadHeader;
    return false;
  }
  *frame = Frame{body[kFrameHeaderKind], get_u16(body + kFrameHeaderSeq),
                 get_u32(body + kFrameHeaderSession), body[kFrameHeaderFlags],
                 body + kHeaderSize, length};
  return true;
}

size_t build_body(uint8_t kind, uint16_t seq, uint32_t session, uint8_t flags,
                  const uint8_t* payload, size_t length, uint8_t* out, size_t capacity) {
  if (length > kMaxPayload || capacity < kMinBody + length) {
    return 0;
  }
  if (length > 0 && payload != out + kHeaderSize) {
    memmove(out + kHeaderSize, payload, length);
  }
  out[kFrameHeaderVersion] = kProtocolVersion;
  out[kFrameHeaderKind] = kind;
  out[kFrameHeaderSeq] = static_cast<uint8_t>(seq);
  out[kFrameHeaderSeq + 1] = static_cast<uint8_t>(seq >> 8);
  put_u32(out + kFrameHeaderSession, session);
  out[kFrameHeaderLength] = static_cast<uint8_t>(length);
  out[kFrameHeaderLength + 1] = static_cast<uint8_t>(length >> 8);
  out[kFrameHeaderFlags] = flags;
  out[kFrameHeaderReserved] = 0;
  put_u32(out + kHeaderSize + length, runner::crc32(out, kHeaderSize + length));
  return kMinBody + length;
}

size_t encode_wire(const uint8_t* body, size_t size, uint8_t* out, size_t capacity) {
  if (capacity < 2) {
    return 0;
  }
  size_t n = cobs_encode(body, size, out + 1, capacity - 2);
  if (n == 0) {
    return 0;
  }
  out[0] = 0;
  out[n + 1] = 0;
  return n + 2;
}

Deframer::Event Deframer::push(uint8_t byte, NakReason* why) {
  if (byte != 0) {
    if (size_ < sizeof(buffer_)) {
      buffer_[size_++] = byte;
    } else {
      overflowed_ = true;  // keep counting nothing: the frame is lost anyway
    }
    return Event::None;
  }
  size_t size = size_;
  bool overflowed = overflowed_;
  clear();
  if (overflowed) {
    *why = NakReason::TooLong;
    return Event::Dropped;
  }
  if (size == 0) {
    return Event::None;  // two delimiters in a row
  }
  if (!cobs_decode(buffer_, size, buffer_, sizeof(buffer_), &body_size_)) {
    *why = NakReason::Cobs;
    return Event::Dropped;
  }
  return Event::Body;
}

}  // namespace hostlink
