// The board's Ethos-U for the driver in firmware/ethosu/: registers at SDK_NPU_BASE, IRQ
// SDK_NPU_IRQ (vector in startup.cpp), the register layout of board.yaml's npu.kind
// (SDK_NPU_ETHOS_U55 / SDK_NPU_ETHOS_U85), a wait bounded by SysTick ticks, Armv8-M D-cache
// maintenance by address. On QEMU (no NPU) the registers read 0: the backend then refuses
// the program (NoHardware) or, in link mode, runs on the link's virtual NPU, whose interrupt
// board_npu_pend_irq() raises.
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "board.h"
#include "board_config.h"
#include "board_npu.h"
#include "platform.h"

namespace {

constexpr uintptr_t kNvicIser = 0xE000E100;
constexpr uintptr_t kNvicIspr = 0xE000E200;
constexpr uintptr_t kNvicIcpr = 0xE000E280;
constexpr uintptr_t kNvicIpr = 0xE000E400;  // one priority byte per interrupt
// Lower urgency than the console's RX interrupt (priority 0): the virtual NPU's handler waits
// for the host's answers, which arrive by that interrupt.
constexpr uint8_t kNpuIrqPriority = 0x80;

#if defined(SDK_NPU_ETHOS_U85)
constexpr ethosu::NpuKind kNpuKind = ethosu::NpuKind::EthosU85;
#elif defined(SDK_NPU_ETHOS_U55)
constexpr ethosu::NpuKind kNpuKind = ethosu::NpuKind::EthosU55;
#else
#error "board_config.h names no NPU kind (board.yaml npu.kind: ethos-u55 or ethos-u85)"
#endif

volatile uint32_t& reg(uintptr_t address) { return *reinterpret_cast<volatile uint32_t*>(address); }

uint32_t npu_read32(void*, uint32_t offset) { return reg(SDK_NPU_BASE + offset); }

void npu_write32(void*, uint32_t offset, uint32_t value) { reg(SDK_NPU_BASE + offset) = value; }

// Interrupts masked between the check and the wfi, as platform_wait: an NPU interrupt after the
// check stays pending and ends the wfi, then is taken at cpsie. SysTick wraps wake the wfi too,
// so the tick budget is looked at even if the NPU never interrupts.
bool npu_wait_for_irq(void*, const volatile bool* irq_done, uint32_t timeout_us) {
  const uint64_t budget = static_cast<uint64_t>(timeout_us) * SDK_TICK_HZ / 1000000u;
  const uint64_t start = platform_ticks();
  for (;;) {
    __asm volatile("cpsid i" ::: "memory");
    if (*irq_done) {
      __asm volatile("cpsie i\n isb" ::: "memory");
      return true;
    }
    if (platform_ticks() - start >= budget) {
      __asm volatile("cpsie i\n isb" ::: "memory");
      return false;
    }
    __asm volatile("dsb\n wfi" ::: "memory");
    __asm volatile("cpsie i\n isb" ::: "memory");
  }
}

#if defined(SDK_TA_COUNT)
// board.yaml npu_memories.timing_adapters, as board_config.h has them.
static_assert(SDK_TA_COUNT <= ethosu::kMaxTimingAdapters, "more timing adapters than ports");
static_assert(SDK_TA_REGISTER_COUNT == ethosu::kTimingAdapterRegisters,
              "board_config.h's timing-adapter registers differ from the backend's");
constexpr uint32_t kTaRegisterOffsets[] = SDK_TA_REGISTER_OFFSETS;
constexpr ethosu::TimingAdapterConfig kTaConfigs[] = SDK_TA_MODES;
static_assert(sizeof(kTaConfigs) / sizeof(kTaConfigs[0]) == SDK_TA_MODE_COUNT, "SDK_TA_MODES");

ethosu::TimingAdapters board_timing_adapters() {
  ethosu::TimingAdapters ta = {SDK_TA_COUNT, SDK_TA_OFFSETS, kTaRegisterOffsets, kTaConfigs,
                               SDK_TA_MODE_COUNT};
  return ta;
}
#else
ethosu::TimingAdapters board_timing_adapters() { return ethosu::TimingAdapters{}; }
#endif

}  // namespace

extern "C" void board_npu_irq_handler(void) { ethosu::handle_npu_irq(); }

ethosu::NpuPlatform board_npu_platform() {
  ethosu::NpuPlatform p = ethosu::default_platform(SDK_NPU_BASE, kNpuKind);
  p.read32 = npu_read32;
  p.write32 = npu_write32;
  p.wait_for_irq = npu_wait_for_irq;
  p.clean_dcache = ethosu::armv8m_clean_dcache;  // no-ops with the cache off and under QEMU
  p.invalidate_dcache = ethosu::armv8m_invalidate_dcache;
  p.timing_adapters = board_timing_adapters();
  reg(kNvicIcpr + 4 * (SDK_NPU_IRQ / 32)) = 1u << (SDK_NPU_IRQ % 32);  // nothing stale pending
  *reinterpret_cast<volatile uint8_t*>(kNvicIpr + SDK_NPU_IRQ) = kNpuIrqPriority;
  reg(kNvicIser + 4 * (SDK_NPU_IRQ / 32)) = 1u << (SDK_NPU_IRQ % 32);
  return p;
}

void board_npu_pend_irq() {
  reg(kNvicIspr + 4 * (SDK_NPU_IRQ / 32)) = 1u << (SDK_NPU_IRQ % 32);
  __asm volatile("dsb\n isb" ::: "memory");  // taken here, before the caller goes on
}
