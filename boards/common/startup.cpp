// Reset, vector table and fault reporting for the Armv8.1-M CPUs of the Corstone boards
// (Cortex-M55 on Corstone-300, Cortex-M85 on Corstone-320).
//
// The CPU resets in Secure state and fetches the vector table from its reset vector base:
// address 0 on Corstone-300, which aliases ITCM (linked at 0x10000000); the boot ROM at
// 0x11000000 on Corstone-320 (INITSVTOR). The board's linker.ld puts .vectors there; the table
// is constant (every handler is known at build time), so VTOR points at it where it lies. The
// reset handler enables the FPU/MVE before any code that may use them, copies .data, zeroes .bss, runs
// static constructors, and calls main. Faults print an `@sdk fault` record
// (CFSR, HFSR, MMFAR, BFAR and the stacked PC/LR/xPSR, marked `frame=stale` when the fault
// hit while the frame was being stacked) and exit with 100.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "contract.h"
#include "board.h"
#include "board_config.h"
#include "platform.h"

extern "C" {
extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end, __stack_top,
    __stack_limit;
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);
int main(void);
void reset_handler(void);
void fault_handler(void);
void default_handler(void);
void SysTick_Handler(void);
}

namespace {

constexpr int kNumExternalIrqs = 96;  // the boards wire fewer; unused entries report themselves
static_assert(SDK_CONSOLE_RX_IRQ < kNumExternalIrqs, "the console RX IRQ is outside the table");
static_assert(SDK_NPU_IRQ < kNumExternalIrqs, "the NPU IRQ is outside the table");
static_assert(SDK_NPU_IRQ != SDK_CONSOLE_RX_IRQ, "the NPU and the console share an IRQ");

volatile uint32_t& reg(uintptr_t address) { return *reinterpret_cast<volatile uint32_t*>(address); }

constexpr uintptr_t kCpacr = 0xE000ED88;
constexpr uintptr_t kVtor = 0xE000ED08;
constexpr uintptr_t kShcsr = 0xE000ED24;
constexpr uintptr_t kCfsr = 0xE000ED28;
constexpr uintptr_t kHfsr = 0xE000ED2C;
constexpr uintptr_t kMmfar = 0xE000ED34;
constexpr uintptr_t kBfar = 0xE000ED38;
constexpr uint32_t kShcsrFaultEnables = (1u << 16) | (1u << 17) | (1u << 18);  // Mem, Bus, Usage

}  // namespace

using Handler = void (*)(void);

struct VectorTable {
  uint32_t* initial_sp;
  Handler handlers[15 + kNumExternalIrqs];
};

constexpr VectorTable make_vector_table() {
  VectorTable table{&__stack_top, {}};
  for (Handler& handler : table.handlers) {
    handler = default_handler;
  }
  table.handlers[0] = reset_handler;     // 1 Reset
  table.handlers[2] = fault_handler;     // 3 HardFault
  table.handlers[3] = fault_handler;     // 4 MemManage
  table.handlers[4] = fault_handler;     // 5 BusFault
  table.handlers[5] = fault_handler;     // 6 UsageFault
  table.handlers[6] = fault_handler;     // 7 SecureFault
  table.handlers[14] = SysTick_Handler;  // 15 SysTick
  // External interrupt n is exception 16 + n, handlers[15 + n].
  table.handlers[15 + SDK_CONSOLE_RX_IRQ] = board_console_rx_handler;
  table.handlers[15 + SDK_NPU_IRQ] = board_npu_irq_handler;
  return table;
}

extern "C" __attribute__((section(".vectors"), used)) const VectorTable g_vector_table =
    make_vector_table();

extern "C" __attribute__((noreturn, used)) void report_fault(const uint32_t* frame) {
  // frame: r0, r1, r2, r3, r12, lr, pc, xpsr as the exception entry stacked them.
  board_report_fault(reg(kCfsr), reg(kHfsr), reg(kMmfar), reg(kBfar), frame[6], frame[5],
                     frame[7]);
  platform_exit(contract::kExitFault);
}

// Picks the stack the faulting code used (EXC_RETURN bit 2) and reports its frame. The stack
// limit goes first: after a stack overflow (UsageFault STKOF) the report needs some stack.
extern "C" __attribute__((naked)) void fault_handler(void) {
  __asm volatile(
      "movs r0, #0\n"
      "msr msplim, r0\n"
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "b report_fault\n");
}

extern "C" __attribute__((noreturn)) void default_handler(void) {
  uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  board_report_unexpected_interrupt(ipsr & 0x1FF);
  platform_exit(contract::kExitFault);
}

extern "C" __attribute__((noreturn, used)) void reset_handler(void) {
  // FPU and MVE (CP10/CP11 full access) before any code that may use them.
  reg(kCpacr) |= (0xFu << 20);
  __asm volatile("dsb\n isb" ::: "memory");
  reg(kVtor) = reinterpret_cast<uintptr_t>(&g_vector_table);
  reg(kShcsr) |= kShcsrFaultEnables;  // precise fault reports instead of a HardFault
  // A stack overflow faults (UsageFault STKOF) instead of silently overwriting .bss.
  __asm volatile("msr msplim, %0" ::"r"(&__stack_limit));
  // Word loops, not memcpy/memset: these run before the C library may be used (SConstruct
  // builds board sources with -fno-tree-loop-distribute-patterns so GCC keeps them loops).
  for (uint32_t *src = &__data_load, *dst = &__data_start; dst < &__data_end;) {
    *dst++ = *src++;
  }
  for (uint32_t* dst = &__bss_start; dst < &__bss_end;) {
    *dst++ = 0;
  }
  for (void (**ctor)(void) = __init_array_start; ctor < __init_array_end; ++ctor) {
    (*ctor)();
  }
  platform_exit(main());
}
