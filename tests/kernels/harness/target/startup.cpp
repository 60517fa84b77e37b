// Vector table, reset, semihosting, UART0 and SysTick for the bare-metal test
// images (QEMU mps3-an547). Deliberately minimal: the real board support
// lives in boards/.
#include <stdint.h>
#include <string.h>

#include "semihost.h"

extern "C" {
extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end, __stack_top;
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();
void reset_handler();
void fault_handler();
void systick_handler();
}

namespace {

volatile uint32_t& reg(uintptr_t addr) { return *reinterpret_cast<volatile uint32_t*>(addr); }

constexpr uintptr_t kCpacr = 0xE000ED88u;
constexpr uintptr_t kSystCsr = 0xE000E010u, kSystRvr = 0xE000E014u, kSystCvr = 0xE000E018u;
constexpr uintptr_t kUart0 = 0x59303000u;  // DATA 0x0, STATE 0x4 (bit0 TX full), CTRL 0x8 (bit0 TX enable)

volatile uint64_t g_tick_wraps = 0;

uint32_t call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

}  // namespace

__attribute__((section(".vectors"), used)) void (*const g_vectors[16])() = {
    reinterpret_cast<void (*)()>(&__stack_top),
    reset_handler,
    fault_handler,  // NMI
    fault_handler,  // HardFault
    fault_handler,  // MemManage
    fault_handler,  // BusFault
    fault_handler,  // UsageFault
    fault_handler,  // SecureFault
    nullptr,
    nullptr,
    nullptr,
    fault_handler,  // SVC
    fault_handler,  // DebugMon
    nullptr,
    fault_handler,  // PendSV
    systick_handler,
};

void reset_handler() {
  // FPU and Helium (CP10/CP11) before anything may touch an S or Q register.
  reg(kCpacr) |= 0xFu << 20;
  __asm__ volatile("dsb\n isb" ::: "memory");
  memcpy(&__data_start, &__data_load,
         static_cast<size_t>(reinterpret_cast<uint8_t*>(&__data_end) - reinterpret_cast<uint8_t*>(&__data_start)));
  memset(&__bss_start, 0,
         static_cast<size_t>(reinterpret_cast<uint8_t*>(&__bss_end) - reinterpret_cast<uint8_t*>(&__bss_start)));
  for (void (**f)() = __init_array_start; f != __init_array_end; ++f) (*f)();
  reg(kUart0 + 0x8) = 1u;
  semihost::exit(main());
}

void fault_handler() {
  uart_write("fault\n");
  semihost::exit(3);
}

void systick_handler() { g_tick_wraps = g_tick_wraps + 1; }

namespace semihost {

int open(const char* path, bool write_mode) {
  const uint32_t block[3] = {reinterpret_cast<uint32_t>(path), write_mode ? 5u : 1u, strlen(path)};
  return static_cast<int>(call(0x01, block));
}
bool close(int handle) {
  const uint32_t block[1] = {static_cast<uint32_t>(handle)};
  return call(0x02, block) == 0;
}
long length(int handle) {
  const uint32_t block[1] = {static_cast<uint32_t>(handle)};
  return static_cast<long>(static_cast<int32_t>(call(0x0C, block)));
}
bool read(int handle, void* buf, size_t n) {
  const uint32_t block[3] = {static_cast<uint32_t>(handle), reinterpret_cast<uint32_t>(buf), n};
  return call(0x06, block) == 0;
}
bool write(int handle, const void* buf, size_t n) {
  const uint32_t block[3] = {static_cast<uint32_t>(handle), reinterpret_cast<uint32_t>(buf), n};
  return call(0x05, block) == 0;
}
bool cmdline(char* buf, size_t n) {
  uint32_t block[2] = {reinterpret_cast<uint32_t>(buf), n};
  return call(0x15, block) == 0;
}
void exit(int code) {
  const uint32_t block[2] = {0x20026u, static_cast<uint32_t>(code)};
  call(0x20, block);
  for (;;) {
  }
}

}  // namespace semihost

void uart_write(const char* s) {
  for (; *s != '\0'; ++s) {
    while ((reg(kUart0 + 0x4) & 1u) != 0u) {
    }
    reg(kUart0) = static_cast<uint8_t>(*s);
  }
}

void uart_write_uint(uint64_t v) {
  char buf[24];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10u);
    v /= 10u;
  } while (v != 0u);
  char out[24];
  for (int i = 0; i < n; ++i) out[i] = buf[n - 1 - i];
  out[n] = '\0';
  uart_write(out);
}

void ticks_start() {
  reg(kSystCsr) = 0;
  reg(kSystRvr) = 0x00FFFFFFu;
  reg(kSystCvr) = 0;
  g_tick_wraps = 0;
  reg(kSystCsr) = 0x7u;  // processor clock, interrupt on wrap, enable
  // The counter starts at 0 and reloads on its first tick without counting a
  // wrap: wait for that so the first reading is already on the scale.
  while (reg(kSystCvr) == 0u) {
  }
}

uint64_t ticks_now() {
  // Re-read when a wrap lands between the two reads.
  for (;;) {
    const uint64_t wraps = g_tick_wraps;
    const uint32_t cv = reg(kSystCvr);
    if (wraps == g_tick_wraps) return wraps * 0x01000000u + (0x00FFFFFFu - cv);
  }
}
