// The platform hooks on the host (x86): stdout, exit(), a nanosecond clock.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "platform.h"

extern "C" void platform_init(void) {}

extern "C" void platform_write(const char* data, size_t size) { fwrite(data, 1, size, stdout); }

extern "C" void platform_exit(int code) {
  fflush(stdout);
  exit(code);
}

extern "C" uint64_t platform_ticks(void) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

extern "C" uint32_t platform_tick_hz(void) { return 1000000000u; }
