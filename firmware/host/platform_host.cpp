// The platform hooks on the host (x86): stdout (or host_link's socket), exit(), a nanosecond
// clock.
#include "platform_host.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "platform.h"

namespace {

int g_fd = -1;          // -1: stdout, nothing to read
bool g_closed = false;  // the peer closed its end

const char* g_file_dir = nullptr;

}  // namespace

void host_platform_file_dir(const char* dir) { g_file_dir = dir; }

extern "C" int platform_host_write_file(const char* name, const void* data, size_t size) {
  if (g_file_dir == nullptr) {
    return -1;  // as a board without semihosting (the unit tests and fuzzers write no files)
  }
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/%s", g_file_dir, name);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(path)) {
    return -2;
  }
  FILE* f = fopen(path, "wb");
  if (f == nullptr) {
    return -2;
  }
  bool ok = fwrite(data, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  return ok ? 0 : -3;
}

extern "C" int platform_host_read_file(const char* name, void* data, size_t size) {
  if (g_file_dir == nullptr) {
    return -1;
  }
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/%s", g_file_dir, name);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(path)) {
    return -2;
  }
  FILE* f = fopen(path, "rb");
  if (f == nullptr) {
    return -2;
  }
  bool ok = fread(data, 1, size, f) == size && fgetc(f) == EOF;  // exactly `size` bytes
  fclose(f);
  return ok ? 0 : -3;
}

void host_platform_use_fd(int fd) {
  g_fd = fd;
  g_closed = false;
}

extern "C" void platform_init(void) {}

extern "C" void platform_write(const void* data, size_t size) {
  if (g_fd < 0) {
    fwrite(data, 1, size, stdout);
    return;
  }
  const char* p = static_cast<const char*>(data);
  while (size > 0 && !g_closed) {
    // MSG_NOSIGNAL: a peer that went away ends the serve loop, not the process.
    ssize_t n = send(g_fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      g_closed = true;
      return;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

extern "C" size_t platform_read(uint8_t* data, size_t max) {
  if (g_fd < 0 || g_closed || max == 0) {
    return 0;
  }
  ssize_t n = recv(g_fd, data, max, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    g_closed = true;
  }
  return n > 0 ? static_cast<size_t>(n) : 0;
}

extern "C" int platform_wait(void) {
  if (g_fd < 0 || g_closed) {
    return 0;
  }
  pollfd p = {g_fd, POLLIN, 0};
  // Bounded, as a board's wfi is by SysTick: the virtual NPU's 1 s / 60 s timers need the
  // serve loop to look at the clock while the host is quiet.
  (void)poll(&p, 1, 100);
  return 1;  // readable, closed, in error or timed out: the next platform_read tells
}

extern "C" uint32_t platform_rx_overflows(void) { return 0; }  // the socket buffers for us

extern "C" void platform_flush(void) { fflush(stdout); }

extern "C" void platform_reset(void) {
  // A process has no system to reset: host_link's transport restarts the server instead.
  platform_flush();
  exit(0);
}

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
