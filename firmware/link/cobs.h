// COBS (Consistent Overhead Byte Stuffing): a body without 0x00 bytes, so 0x00 can delimit
// frames on the wire (docs/link.md "Frames").
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace hostlink {

// The largest encoding of `size` bytes: one code byte per started 254-byte block.
constexpr size_t cobs_max_encoded(size_t size) { return size + size / 254 + 1; }

// Encode `size` bytes into `out` (room for `capacity`); returns the encoded size, or 0 when
// `capacity` is too small (a valid encoding is never empty).
size_t cobs_encode(const uint8_t* data, size_t size, uint8_t* out, size_t capacity);

// Decode `size` encoded bytes into `out` (room for `capacity`; `out` may be `data`: decoding
// never writes ahead of what it has read). False, with *out_size unset, when the input holds a
// 0x00, a code byte runs past the end, or the result does not fit.
bool cobs_decode(const uint8_t* data, size_t size, uint8_t* out, size_t capacity,
                 size_t* out_size);

}  // namespace hostlink
