// The Ethos-U55 / Ethos-U85 register MODEL for host tests (see npu_register_model.h).
#include "npu_register_model.h"

namespace test {

using namespace ethosu;

constexpr uint32_t kResetReads = 2;  // STATUS reads that still show reset_status

NpuRegisterModel::NpuRegisterModel(ethosu::NpuKind model_kind)
    : kind(model_kind),
      id(model_kind == NpuKind::EthosU85 ? 0x20007000u : 0x10066001u),
      config(model_kind == NpuKind::EthosU85 ? 0x20000117u : 0x00001807u) {}

ethosu::NpuPlatform NpuRegisterModel::platform(uintptr_t base) {
  NpuPlatform p = default_platform(base, kind);
  p.read32 = read32;
  p.write32 = write32;
  p.wait_for_irq = wait_for_irq;
  p.ctx = this;
  return p;
}

uint64_t NpuRegisterModel::basep(uint32_t region) const {
  uint32_t at = reg::BASEP0 + 8 * region;
  return (static_cast<uint64_t>(reg(at + 4)) << 32) | reg(at);
}

long NpuRegisterModel::find_write(uint32_t offset, size_t from) const {
  for (size_t i = from; i < log.size(); ++i) {
    if (log[i].write && log[i].offset == offset) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

uint32_t NpuRegisterModel::read32(void* ctx, uint32_t offset) {
  return static_cast<NpuRegisterModel*>(ctx)->read(offset);
}

void NpuRegisterModel::write32(void* ctx, uint32_t offset, uint32_t value) {
  static_cast<NpuRegisterModel*>(ctx)->write(offset, value);
}

bool NpuRegisterModel::wait_for_irq(void* ctx, const volatile bool* irq_done,
                                    uint32_t timeout_us) {
  auto* self = static_cast<NpuRegisterModel*>(ctx);
  self->last_timeout_us = timeout_us;
  if (self->irq_line_ && self->driver_ != nullptr) {
    self->driver_->handle_irq();  // the NVIC would run the handler now
  }
  return *irq_done;  // false: the budget ran out
}

uint32_t NpuRegisterModel::read(uint32_t offset) {
  uint32_t value = 0;
  if (present) {
    switch (offset) {
      case reg::ID:
        value = id;
        break;
      case reg::CONFIG:
        value = config;
        break;
      case reg::CMD:
        value = cmd_q_;
        break;
      case reg::STATUS:
        value = regs_[offset / 4];
        if (status_reads_left > 0 && !reset_never_completes && --status_reads_left == 0) {
          regs_[offset / 4] &= ~status::kResetStatus;
        }
        break;
      default:
        value = offset < sizeof(regs_) ? regs_[offset / 4] : 0;
        break;
    }
  }
  log.push_back(Access{false, offset, value});
  return value;
}

void NpuRegisterModel::write(uint32_t offset, uint32_t value) {
  log.push_back(Access{true, offset, value});
  if (!present || offset >= sizeof(regs_)) {
    return;  // QEMU's placeholder ignores writes
  }
  uint32_t& status_reg = regs_[reg::STATUS / 4];
  switch (offset) {
    case reg::RESET:
      for (uint32_t& r : regs_) {
        r = 0;
      }
      status_reg = status::kResetStatus;
      status_reads_left = kResetReads;
      regs_[reg::PROT / 4] = prot_ignores_reset ? 0 : (value & 3u);
      cmd_q_ = 0xC;
      irq_line_ = false;
      return;
    case reg::CMD:
      cmd_q_ = value & cmd::kKeepQ;
      if ((value & cmd::kClearIrq) != 0) {
        status_reg &= ~status::kIrqRaised;
        irq_line_ = false;
      }
      if ((value & cmd::kRun) != 0) {
        ++runs;
        if (on_run) {
          on_run(*this);
        }
        if (never_interrupts) {
          status_reg |= status::kState;  // still running
          return;
        }
        regs_[reg::QREAD / 4] = regs_[reg::QSIZE / 4];
        const uint32_t pmu = layout_of(kind).pmu;
        bool counting = (regs_[(pmu + reg::PMU_PMCR) / 4] & 1u) != 0 &&
                        (regs_[(pmu + reg::PMU_PMCNTENSET) / 4] & 0x80000000u) != 0;
        regs_[(pmu + reg::PMU_PMCCNTR_LO) / 4] = counting ? static_cast<uint32_t>(cycles) : 0;
        regs_[(pmu + reg::PMU_PMCCNTR_HI) / 4] = counting ? static_cast<uint32_t>(cycles >> 32) : 0;
        status_reg |= status::kIrqRaised | fault_bits |
                      (end_without_cmd_end || fault_bits != 0 ? 0 : status::kCmdEndReached);
        irq_line_ = true;
      }
      return;
    default:
      regs_[offset / 4] = value;
      return;
  }
}

}  // namespace test
