// See npu_absent.h.
#include "npu_absent.h"

namespace test {
namespace {

uint32_t read_nothing(void*, uint32_t) { return 0; }
void write_nowhere(void*, uint32_t, uint32_t) {}
bool never_interrupts(void*, const volatile bool*, uint32_t) { return false; }

}  // namespace

ethosu::NpuPlatform absent_npu_platform(ethosu::NpuKind kind) {
  // For messages: where Corstone-300's U55 and Corstone-320's U85 are.
  uintptr_t base = kind == ethosu::NpuKind::EthosU85 ? 0x50004000 : 0x58102000;
  ethosu::NpuPlatform p = ethosu::default_platform(base, kind);
  p.read32 = read_nothing;
  p.write32 = write_nowhere;
  p.wait_for_irq = never_interrupts;
  return p;
}

}  // namespace test
