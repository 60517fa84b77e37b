// The C library's system calls, for a firmware without files, processes or heap.
//
// Nothing here should ever run: the runtime writes through platform_write and
// allocates nothing. newlib still links references to these (vsnprintf's
// string-growing path, abort), so each one either fails or ends the run loudly.
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "contract.h"
#include "platform.h"

namespace {

void report(const char* text, size_t size) {
  platform_write(text, size);
}

}  // namespace

extern "C" {

// No heap on the target: any attempt is a bug, reported as a fault.
void* _sbrk(ptrdiff_t) {
  static const char kMessage[] = "\0\n@sdk fault reason=heap_use\n\0";  // 0x00: see board.cpp
  report(kMessage, sizeof(kMessage) - 1);
  platform_exit(contract::kExitFault);
}

__attribute__((noreturn)) void _exit(int code) { platform_exit(code); }

int _write(int, const char*, int) {
  errno = ENOSYS;
  return -1;
}
int _read(int, char*, int) {
  errno = ENOSYS;
  return -1;
}
int _close(int) {
  errno = ENOSYS;
  return -1;
}
int _lseek(int, int, int) {
  errno = ENOSYS;
  return -1;
}
int _fstat(int, struct stat*) {
  errno = ENOSYS;
  return -1;
}
int _isatty(int) { return 0; }
int _kill(int, int) {
  errno = ENOSYS;
  return -1;
}
int _getpid(void) { return 1; }

}  // extern "C"
