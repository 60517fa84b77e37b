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

// Write raw bytes to the console (UART0 on boards, stdout on the host), blocking until
// they are queued. No translation: text lines end with "\n" alone.
void platform_write(const void* data, size_t size);

// ---- Receiving (the host link, docs/link.md) --------------------------------------------
// Boards receive by interrupt into a ring buffer; these never block.

// Move up to `max` received bytes into `data`; returns how many (0: none waiting).
size_t platform_read(uint8_t* data, size_t max);

// Sleep until something may have arrived (an interrupt) and return; returns at once when
// bytes are waiting. Returns 0 when no byte can ever come again (the host's peer closed),
// else 1. Spurious returns are allowed: callers loop.
int platform_wait(void);

// Bytes dropped because the receive buffer was full, since platform_init.
uint32_t platform_rx_overflows(void);

// Block until everything written has left the console (the UART's last byte included).
void platform_flush(void);

// Reset the system after flushing the console (AIRCR SYSRESETREQ on Arm M-profile).
__attribute__((noreturn)) void platform_reset(void);

// End the run with `code` (0 = pass). Boards use semihosting
// SYS_EXIT_EXTENDED where available, otherwise they park the CPU.
__attribute__((noreturn)) void platform_exit(int code);

// Write `size` bytes from `data` to the file `name` on the host's side (its whole content:
// created or truncated), where the board has a debugger's file access: semihosting's
// SYS_OPEN/SYS_WRITE/SYS_CLOSE on an emulator (QEMU: relative to its working directory; the
// FVP: to cpu0.semihosting-cwd). Returns 0 when every byte was written, -1 when the build has
// no semihosting (exit=park: on a board without a debugger its bkpt would be a HardFault),
// -2 when the host would not open the file, -3 when it did not take every byte. The caller
// checks `name` (the host link: docs/link.md GET_OUTPUT_FILE).
int platform_host_write_file(const char* name, const void* data, size_t size);

// Read the file `name` on the host's side into `data`: it must hold exactly `size` bytes.
// Returns 0 when it did and every byte was read, -1 without semihosting (as above), -2 when
// the host would not open the file, -3 when its length is not `size` or a read fell short.
int platform_host_read_file(const char* name, void* data, size_t size);

// A monotonic tick count and its rate. Under QEMU with -icount the ticks are
// proportional to retired instructions; the host labels them accordingly.
uint64_t platform_ticks(void);
uint32_t platform_tick_hz(void);

#ifdef __cplusplus
}
#endif
