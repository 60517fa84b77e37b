// Corstone-300 platform hooks: CMSDK UART0 console, SysTick ticks, the end of a run.
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
constexpr uintptr_t kUartBauddiv = SDK_CONSOLE_BASE + 0x10;
constexpr uint32_t kUartStateTxFull = 1u << 0;
constexpr uint32_t kUartCtrlTxEnable = 1u << 0;

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
#elif !defined(SDK_EXIT_PARK)
#error "board_config.h names no exit method (SDK_EXIT_SEMIHOSTING or SDK_EXIT_PARK)"
#endif

// CFSR bits of faults taken while stacking: MSTKERR (MemManage), STKERR (BusFault), STKOF
// (UsageFault, the stack limit MSPLIM).
constexpr uint32_t kCfsrStackingFaults = (1u << 4) | (1u << 12) | (1u << 20);

volatile uint32_t g_systick_wraps = 0;

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

extern "C" void platform_init(void) {
  reg(kUartBauddiv) = SDK_CONSOLE_BAUD_DIVIDER;
  reg(kUartCtrl) = kUartCtrlTxEnable;
  reg(kSystRvr) = kSysTickReload;
  reg(kSystCvr) = 0;
  reg(kSystCsr) = kSystCsrEnable | kSystCsrTickInt | kSystCsrCpuClock;
}

extern "C" void platform_write(const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') {
      uart_put('\r');
    }
    uart_put(data[i]);
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

extern "C" __attribute__((noreturn)) void platform_exit(int code) {
#if defined(SDK_EXIT_SEMIHOSTING)
  volatile uint32_t block[2] = {kAdpStoppedApplicationExit, static_cast<uint32_t>(code)};
  register uint32_t r0 __asm("r0") = kSysExitExtended;
  register const volatile uint32_t* r1 __asm("r1") = block;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
#else
  (void)code;  // the record (result line or fault record) already said how the run ended
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
  platform_write("\n@sdk fault", 11);
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
  platform_write("\n", 1);
}

extern "C" void board_report_unexpected_interrupt(uint32_t exception) {
  platform_write("\n@sdk fault reason=unexpected_interrupt", 39);
  put_hex("exception", exception);
  platform_write("\n", 1);
}
