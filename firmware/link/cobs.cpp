// COBS encode/decode (see cobs.h).
#include "cobs.h"

namespace hostlink {

size_t cobs_encode(const uint8_t* data, size_t size, uint8_t* out, size_t capacity) {
  if (capacity < cobs_max_encoded(size)) {
    return 0;  // checked up front, so the loop below never tests bounds
  }
  size_t code_at = 0;  // where the current block's code byte goes
  size_t n = 1;
  uint8_t code = 1;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      out[code_at] = code;
      code_at = n++;
      code = 1;
      continue;
    }
    out[n++] = data[i];
    ++code;
    // A full block (254 data bytes) ends without an implied zero; start the next one unless
    // the input ends here.
    if (code == 0xFF && i + 1 < size) {
      out[code_at] = code;
      code_at = n++;
      code = 1;
    }
  }
  out[code_at] = code;
  return n;
}

bool cobs_decode(const uint8_t* data, size_t size, uint8_t* out, size_t capacity,
                 size_t* out_size) {
  size_t in = 0;
  size_t n = 0;
  while (in < size) {
    uint8_t code = data[in++];
    if (code == 0) {
      return false;
    }
    size_t run = code - 1u;
    if (run > size - in || run > capacity - n) {
      return false;
    }
    for (size_t k = 0; k < run; ++k) {
      uint8_t byte = data[in++];
      if (byte == 0) {
        return false;
      }
      out[n++] = byte;
    }
    // Every block but a full one and the last is followed by an implied zero.
    if (code != 0xFF && in < size) {
      if (n == capacity) {
        return false;
      }
      out[n++] = 0;
    }
  }
  *out_size = n;
  return true;
}

}  // namespace hostlink
