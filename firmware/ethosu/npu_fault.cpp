// Test variants of an NPU platform (see npu_fault.h).
#include "npu_fault.h"

#include <string.h>

namespace ethosu {
namespace {

NpuPlatform g_inner = {};
NpuFault g_fault = NpuFault::None;

constexpr uint32_t kBasep1 = reg::BASEP0 + 8;
constexpr uint32_t kBasep2 = reg::BASEP0 + 16;
constexpr uint32_t kBasep3 = reg::BASEP0 + 24;

uint32_t read32(void*, uint32_t offset) { return g_inner.read32(g_inner.ctx, offset); }

void write32(void*, uint32_t offset, uint32_t value) {
  switch (g_fault) {
    case NpuFault::WrongBase:
      if (offset == kBasep1 || offset == kBasep2) value += 16;
      break;
    case NpuFault::WrongWeights:
      if (offset == reg::BASEP0) value += 16;
      break;
    case NpuFault::WrongRegion:
      if (offset == kBasep1 || offset == kBasep1 + 4) offset += kBasep3 - kBasep1;
      break;
    case NpuFault::WrongQsize:
      if (offset == reg::QSIZE) value -= 16;
      break;
    case NpuFault::NoStart:
      if (offset == reg::CMD && (value & cmd::kRun) != 0) return;
      break;
    case NpuFault::None:
      break;
  }
  g_inner.write32(g_inner.ctx, offset, value);
}

bool wait_for_irq(void*, const volatile bool* irq_done, uint32_t timeout_us) {
  return g_inner.wait_for_irq(g_inner.ctx, irq_done, timeout_us);
}

}  // namespace

NpuFault npu_fault_named(const char* name) {
  if (strcmp(name, "wrong_base") == 0) return NpuFault::WrongBase;
  if (strcmp(name, "wrong_weights") == 0) return NpuFault::WrongWeights;
  if (strcmp(name, "wrong_region") == 0) return NpuFault::WrongRegion;
  if (strcmp(name, "wrong_qsize") == 0) return NpuFault::WrongQsize;
  if (strcmp(name, "no_start") == 0) return NpuFault::NoStart;
  return NpuFault::None;
}

NpuPlatform faulty_platform(const NpuPlatform& inner, NpuFault fault) {
  g_inner = inner;
  g_fault = fault;
  NpuPlatform p = inner;
  p.read32 = read32;
  p.write32 = write32;
  p.wait_for_irq = wait_for_irq;
  return p;
}

}  // namespace ethosu
