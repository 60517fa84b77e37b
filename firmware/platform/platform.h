// The few things the runtime and runner need from a board (or the host).
//
// Each board implements these in boards/<name>/ (board.cpp and startup); the
// host build implements them in firmware/host/. Nothing else in the firmware
// touches hardware addresses.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bring up clocks, console UART and the tick counter. Called once from main.
void platform_init(void);

// Write bytes to the console (UART0 on boards, stdout on the host).
void platform_write(const char* data, size_t size);

// End the run with `code` (0 = pass). Boards use semihosting
// SYS_EXIT_EXTENDED where available, otherwise they park the CPU.
__attribute__((noreturn)) void platform_exit(int code);

// A monotonic tick count and its rate. Under QEMU with -icount the ticks are
// proportional to retired instructions; the host labels them accordingly.
uint64_t platform_ticks(void);
uint32_t platform_tick_hz(void);

#ifdef __cplusplus
}
#endif
