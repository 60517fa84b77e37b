// Semihosting (bkpt 0xAB) and the UART: how the bare-metal test images reach
// the host under QEMU (-semihosting-config enable=on,target=native).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace semihost {

// Host file I/O; -1 / false on failure.
int open(const char* path, bool write);
bool close(int handle);
long length(int handle);
bool read(int handle, void* buf, size_t n);
bool write(int handle, const void* buf, size_t n);
// The command line given with -semihosting-config arg=...; false if none.
bool cmdline(char* buf, size_t n);
// Ends QEMU with `code` as its exit status.
[[noreturn]] void exit(int code);

}  // namespace semihost

// UART0 (CMSDK APB UART, secure alias) text output.
void uart_write(const char* s);
void uart_write_uint(uint64_t v);

// SysTick counting processor clocks, extended to 64 bits by its interrupt.
void ticks_start();
uint64_t ticks_now();
