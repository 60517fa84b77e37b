// Console lines (logs, reasons) and the CRC-32 the link and the program slot use.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace runner {

// CRC-32 (IEEE 802.3, as zlib.crc32), continuing from `crc` (0 to start).
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

// "[1,8,16]" ("[]" for 0 dimensions), for reasons about input shapes.
struct ShapeText {
  char text[100];  // 8 dimensions of 10 digits, commas, brackets
};
ShapeText shape_text(const int32_t* sizes, size_t dim);

// "executor_runner: <text>" on the console.
void log(const char* text);

// One console line, built piecewise and written through platform_write.
// Flushes by itself when its buffer fills, so a line may be any length.
class Line {
 public:
  Line() : length_(0) {}
  Line& text(const char* s);
  Line& u64(uint64_t value);
  Line& i64(int64_t value);
  Line& hex32(uint32_t value);  // 8 lowercase digits, no prefix
  void end();  // newline + flush

 private:
  void put(char c);
  void flush();
  char buffer_[128];
  size_t length_;
};

}  // namespace runner
