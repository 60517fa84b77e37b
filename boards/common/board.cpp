// Platform hooks of the Corstone boards (Corstone-300, Corstone-320): CMSDK UART0 console (TX
// polled, RX by interrupt into a ring buffer), SysTick ticks, reset, the end of a run.
//
// Every address comes from board_config.h, generated from board.yaml. How a run ends is a
// build option (board.yaml runtime.exit, SCons exit=): SDK_EXIT_SEMIHOSTING for QEMU and the
// FVP, SDK_EXIT_PARK for a board without a debugger, where semihosting's bkpt would escalate
// to a HardFault.
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "board_config.h"
#include "platform.h"

namespace {

volatile uint32_t& reg(uintptr_t address) { return *reinterpret_cast<volatile uint32_t*>(address); }

// CMSDK APB UART registers.
constexpr uintptr_t kUartData = SDK_CONSOLE_BASE + 0x00;
constexpr uintptr_t kUartState = SDK_CONSOLE_BASE + 0x04;
constexpr uintptr_t kUartCtrl = SDK_CONSOLE_BASE + 0x08;
constexpr uintptr_t kUartIntStatus = SDK_CONSOLE_BASE + 0x0C;
constexpr uintptr_t kUartBauddiv = SDK_CONSOLE_BASE + 0x10;
constexpr uint32_t kUartStateTxFull = 1u << 0;
constexpr uint32_t kUartStateRxFull = 1u << 1;
constexpr uint32_t kUartStateRxOverrun = 1u << 3;
constexpr uint32_t kUartCtrlTxEnable = 1u << 0;
constexpr uint32_t kUartCtrlRxEnable = 1u << 1;
constexpr uint32_t kUartCtrlRxIrqEnable = 1u << 3;
constexpr uint32_t kUartIntRx = 1u << 1;

// NVIC set-enable registers, and AIRCR (VECTKEY + SYSRESETREQ).
constexpr uintptr_t kNvicIser = 0xE000E100;
constexpr uintptr_t kAircr = 0xE000ED0C;
constexpr uint32_t kAircrVectKey = 0x05FAu << 16;
constexpr uint32_t kAircrSysResetReq = 1u << 2;

// The receive ring: larger than one request frame (docs/link.md: 4096-byte payloads), so a
// stop-and-wait host never overflows it. A power of two: indices wrap by masking.
constexpr uint32_t kRxRingSize = 8192;
static_assert((kRxRingSize & (kRxRingSize - 1)) == 0, "ring size must be a power of two");

// SysTick (24-bit down-counter) and the SysTick-pending bit of ICSR.
constexpr uintptr_t kSystCsr = 0xE000E010;
constexpr uintptr_t kSystRvr = 0xE000E014;
constexpr uintptr_t kSystCvr = 0xE000E018;
constexpr uintptr_t kIcsr = 0xE000ED04;
constexpr uint32_t kIcsrPendStSet = 1u << 26;
constexpr uint32_t kSysTickReload = 0x00FFFFFFu;
constexpr uint32_t kSystCsrEnable = 1u << 0;
constexpr uint32_t kSystCsrTickInt = 1u << 1;
constexpr uint32_t kSystCsrCpuClock = 1u << 2;

#if defined(SDK_EXIT_SEMIHOSTING)
// Semihosting: SYS_EXIT_EXTENDED with ADP_Stopped_ApplicationExit carries a full exit code.
constexpr uint32_t kSysExitExtended = 0x20;
constexpr uint32_t kAdpStoppedApplicationExit = 0x20026;
// File operations (the host link's GET_OUTPUT_FILE): SYS_OPEN's mode 5 is fopen's "wb".
constexpr uint32_t kSysOpen = 0x01;
constexpr uint32_t kSysClose = 0x02;
constexpr uint32_t kSysWrite = 0x05;
constexpr uint32_t kSysRead = 0x06;
constexpr uint32_t kSysFlen = 0x0C;
constexpr uint32_t kOpenModeReadBinary = 1;
constexpr uint32_t kOpenModeWriteBinary = 5;
// SYS_WRITE in pieces: each one is a single trap, so a few are as fast as one.
constexpr size_t kSemihostingWriteChunk = 64 * 1024;

uint32_t semihosting_call(uint32_t op, const volatile uint32_t* block) {
  register uint32_t r0 __asm("r0") = op;
  register const volatile uint32_t* r1 __asm("r1") = block;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
#elif !defined(SDK_EXIT_PARK)
#error "board_config.h names no exit method (SDK_EXIT_SEMIHOSTING or SDK_EXIT_PARK)"
#endif

// CFSR bits of faults taken while stacking: MSTKERR (MemManage), STKERR (BusFault), STKOF
// (UsageFault, the stack limit MSPLIM).
constexpr uint32_t kCfsrStackingFaults = (1u << 4) | (1u << 12) | (1u << 20);

volatile uint32_t g_systick_wraps = 0;

// Written by the RX interrupt only (head, overflows) or by platform_read only (tail).
uint8_t g_rx_ring[kRxRingSize];
volatile uint32_t g_rx_head = 0;
volatile uint32_t g_rx_tail = 0;
volatile uint32_t g_rx_overflows = 0;

void uart_put(char c) {
  while (reg(kUartState) & kUartStateTxFull) {
  }
  reg(kUartData) = static_cast<uint8_t>(c);
}

void put_hex(const char* key, uint32_t value) {
  static const char kDigits[] = "0123456789abcdef";
  char text[11] = {'0', 'x'};
  for (int i = 0; i < 8; ++i) {
    text[2 + i] = kDigits[(value >> (28 - 4 * i)) & 0xF];
  }
  text[10] = '\0';
  platform_write(" ", 1);
  for (const char* k = key; *k != '\0'; ++k) {
    uart_put(*k);
  }
  platform_write("=", 1);
  platform_write(text, 10);
}

}  // namespace

extern "C" void SysTick_Handler(void) { g_systick_wraps = g_systick_wraps + 1; }

// UART0 RX: clear the interrupt first, then drain the data register into the ring. In the other
// order a byte arriving between the last read and the clear would lose its interrupt and sit
// in the data register for ever (the UART takes no byte while it holds one).
extern "C" void board_console_rx_handler(void) {
  reg(kUartIntStatus) = kUartIntRx;
  uint32_t head = g_rx_head;
  while (reg(kUartState) & kUartStateRxFull) {
    uint8_t byte = static_cast<uint8_t>(reg(kUartData));
    if (head - g_rx_tail < kRxRingSize) {
      g_rx_ring[head & (kRxRingSize - 1)] = byte;
      ++head;
    } else {
      g_rx_overflows = g_rx_overflows + 1;
    }
  }
  if (reg(kUartState) & kUartStateRxOverrun) {
    reg(kUartState) = kUartStateRxOverrun;  // write 1 to clear; the byte is lost
    g_rx_overflows = g_rx_overflows + 1;
  }
  g_rx_head = head;
}

extern "C" void platform_init(void) {
  reg(kUartBauddiv) = SDK_CONSOLE_BAUD_DIVIDER;
  reg(kUartCtrl) = kUartCtrlTxEnable | kUartCtrlRxEnable | kUartCtrlRxIrqEnable;
  reg(kNvicIser + 4 * (SDK_CONSOLE_RX_IRQ / 32)) = 1u << (SDK_CONSOLE_RX_IRQ % 32);
  reg(kSystRvr) = kSysTickReload;
  reg(kSystCvr) = 0;
  reg(kSystCsr) = kSystCsrEnable | kSystCsrTickInt | kSystCsrCpuClock;
}

extern "C" void platform_write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  for (size_t i = 0; i < size; ++i) {
    uart_put(bytes[i]);
  }
}

extern "C" size_t platform_read(uint8_t* data, size_t max) {
  uint32_t tail = g_rx_tail;
  uint32_t head = g_rx_head;
  size_t n = 0;
  while (n < max && tail != head) {
    data[n++] = g_rx_ring[tail & (kRxRingSize - 1)];
    ++tail;
  }
  g_rx_tail = tail;
  return n;
}

// Interrupts masked between the check and the wfi: an RX interrupt that comes after the check
// stays pending and wakes the wfi (a pending interrupt ends wfi even under PRIMASK), and is
// taken at cpsie. Without the mask it could be taken just before the wfi and sleep through.
extern "C" int platform_wait(void) {
  __asm volatile("cpsid i" ::: "memory");
  if (g_rx_head == g_rx_tail) {
    __asm volatile("dsb\n wfi" ::: "memory");
  }
  __asm volatile("cpsie i\n isb" ::: "memory");
  return 1;
}

extern "C" uint32_t platform_rx_overflows(void) { return g_rx_overflows; }

// The CMSDK UART says only when its TX buffer is full, not when the shifter is done: after the
// buffer drains, wait two character times (10 bits each at the divider's rate) for the last
// byte to leave.
extern "C" void platform_flush(void) {
  while (reg(kUartState) & kUartStateTxFull) {
  }
  uint64_t wait = 2ull * 10u * SDK_CONSOLE_BAUD_DIVIDER;
  uint64_t start = platform_ticks();
  while (platform_ticks() - start < wait) {
  }
}

extern "C" __attribute__((noreturn)) void platform_reset(void) {
  platform_flush();
  __asm volatile("dsb" ::: "memory");
  reg(kAircr) = kAircrVectKey | kAircrSysResetReq;
  __asm volatile("dsb" ::: "memory");
  for (;;) {
    __asm volatile("nop");  // the reset takes a few cycles to arrive
  }
}

// The 24-bit SysTick extended to 64 bits by counting wraps in its interrupt.
// A wrap whose interrupt is still pending (QEMU takes interrupts only between
// translation blocks) is counted here when the counter has just reloaded.
extern "C" uint64_t platform_ticks(void) {
  uint32_t wraps;
  uint32_t current;
  bool pending;
  do {
    wraps = g_systick_wraps;
    current = reg(kSystCvr);
    pending = (reg(kIcsr) & kIcsrPendStSet) != 0;
  } while (wraps != g_systick_wraps);
  if (pending && current > kSysTickReload / 2) {
    ++wraps;
  }
  return (static_cast<uint64_t>(wraps) << 24) + (kSysTickReload - current);
}

extern "C" uint32_t platform_tick_hz(void) { return SDK_TICK_HZ; }

#if defined(SDK_EXIT_SEMIHOSTING)
namespace {

// SYS_OPEN of `name` in `mode`: the handle, or 0xFFFFFFFF.
uint32_t semihosting_open(const char* name, uint32_t mode) {
  size_t length = 0;
  while (name[length] != '\0') {
    ++length;
  }
  volatile uint32_t block[3] = {reinterpret_cast<uint32_t>(name), mode,
                                static_cast<uint32_t>(length)};
  return semihosting_call(kSysOpen, block);
}

// SYS_READ or SYS_WRITE (`op`) of `size` bytes at `address` in chunks: 0, or -3 when a call
// moved fewer bytes than asked (both return the bytes they did not move).
int semihosting_transfer(uint32_t op, uint32_t handle, uintptr_t address, size_t size) {
  for (size_t done = 0; done < size;) {
    size_t part = size - done < kSemihostingWriteChunk ? size - done : kSemihostingWriteChunk;
    volatile uint32_t block[3] = {handle, static_cast<uint32_t>(address + done),
                                  static_cast<uint32_t>(part)};
    if (semihosting_call(op, block) != 0) {
      return -3;
    }
    done += part;
  }
  return 0;
}

}  // namespace
#endif

extern "C" int platform_host_read_file(const char* name, void* data, size_t size) {
#if defined(SDK_EXIT_SEMIHOSTING)
  uint32_t handle = semihosting_open(name, kOpenModeReadBinary);
  if (handle == 0xFFFFFFFFu) {
    return -2;
  }
  volatile uint32_t flen_block[1] = {handle};
  int result = semihosting_call(kSysFlen, flen_block) == size ? 0 : -3;
  if (result == 0) {
    result = semihosting_transfer(kSysRead, handle, reinterpret_cast<uintptr_t>(data), size);
  }
  volatile uint32_t close_block[1] = {handle};
  semihosting_call(kSysClose, close_block);
  return result;
#else
  (void)name;
  (void)data;
  (void)size;
  return -1;
#endif
}

extern "C" int platform_host_write_file(const char* name, const void* data, size_t size) {
#if defined(SDK_EXIT_SEMIHOSTING)
  uint32_t handle = semihosting_open(name, kOpenModeWriteBinary);
  if (handle == 0xFFFFFFFFu) {
    return -2;
  }
  int result = semihosting_transfer(kSysWrite, handle, reinterpret_cast<uintptr_t>(data), size);
  volatile uint32_t close_block[1] = {handle};
  if (semihosting_call(kSysClose, close_block) != 0 && result == 0) {
    result = -3;
  }
  return result;
#else
  (void)name;
  (void)data;
  (void)size;
  return -1;  // no debugger to take the bkpt: never trap
#endif
}

extern "C" __attribute__((noreturn)) void platform_exit(int code) {
#if defined(SDK_EXIT_SEMIHOSTING)
  volatile uint32_t block[2] = {kAdpStoppedApplicationExit, static_cast<uint32_t>(code)};
  register uint32_t r0 __asm("r0") = kSysExitExtended;
  register const volatile uint32_t* r1 __asm("r1") = block;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
#else
  (void)code;  // the link (or the fault line) already said how it ended
#endif
  // Nothing took the exit (or nothing is meant to): park the CPU with interrupts off.
  reg(kSystCsr) = 0;
  __asm volatile("cpsid i" ::: "memory");
  for (;;) {
    __asm volatile("wfi");
  }
}

extern "C" void board_report_fault(uint32_t cfsr, uint32_t hfsr, uint32_t mmfar, uint32_t bfar,
                                   uint32_t pc, uint32_t lr, uint32_t psr) {
  // Between two 0x00: it ends any frame being sent and is delimited itself, so the host reads
  // it as console text at once (a parked board sends nothing after it).
  platform_write("\0\n@sdk fault", 12);
  put_hex("cfsr", cfsr);
  put_hex("hfsr", hfsr);
  put_hex("mmfar", mmfar);
  put_hex("bfar", bfar);
  put_hex("pc", pc);
  put_hex("lr", lr);
  put_hex("psr", psr);
  // A fault while stacking the exception frame (a bus/MPU error or a stack-limit hit on
  // exception entry) leaves no frame, or half of one: pc/lr/psr above are then whatever the
  // stack held. STKOF is also set when an instruction moved SP past the limit, with a good
  // frame: so the frame *may* be stale.
  if ((cfsr & kCfsrStackingFaults) != 0) {
    static const char kStale[] = " frame=stale";
    platform_write(kStale, sizeof(kStale) - 1);
  }
  platform_write("\n\0", 2);
}

extern "C" void board_report_unexpected_interrupt(uint32_t exception) {
  platform_write("\0\n@sdk fault reason=unexpected_interrupt", 40);
  put_hex("exception", exception);
  platform_write("\n\0", 2);
}
