// Console lines and CRC-32 (console.h).
#include "console.h"

#include <string.h>

#include "platform.h"
#include "rt/error.h"

namespace runner {
namespace {

const char kHexDigits[] = "0123456789abcdef";

// Half-byte table: 16 words instead of 256, fast enough for console output.
const uint32_t kCrcNibble[16] = {
    0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
    0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
    0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

}  // namespace

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kCrcNibble[crc & 0xF];
    crc = (crc >> 4) ^ kCrcNibble[crc & 0xF];
  }
  return ~crc;
}

void Line::put(char c) {
  if (length_ == sizeof(buffer_)) {
    flush();
  }
  buffer_[length_++] = c;
}

void Line::flush() {
  platform_write(buffer_, length_);
  length_ = 0;
}

Line& Line::text(const char* s) {
  while (*s != '\0') {
    put(*s++);
  }
  return *this;
}

Line& Line::u64(uint64_t value) { return text(rt::uint_text(value).text); }

Line& Line::i64(int64_t value) { return text(rt::int_text(value).text); }

Line& Line::hex32(uint32_t value) {
  for (int shift = 28; shift >= 0; shift -= 4) {
    put(kHexDigits[(value >> shift) & 0xF]);
  }
  return *this;
}

void log(const char* text) {
  Line line;
  line.text("executor_runner: ").text(text).end();
}

void Line::end() {
  put('\n');
  flush();
}

ShapeText shape_text(const int32_t* sizes, size_t dim) {
  ShapeText out;
  size_t n = 0;
  out.text[n++] = '[';
  for (size_t d = 0; d < dim; ++d) {
    rt::NumberText size = rt::int_text(sizes[d]);
    size_t len = strlen(size.text);
    if (n + len + 3 > sizeof(out.text)) {
      break;  // cut, never overrun (more than kMaxDims dimensions)
    }
    if (d > 0) {
      out.text[n++] = ',';
    }
    memcpy(out.text + n, size.text, len);
    n += len;
  }
  out.text[n++] = ']';
  out.text[n] = '\0';
  return out;
}

}  // namespace runner
