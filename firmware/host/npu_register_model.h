// A MODEL of the Ethos-U55's or the Ethos-U85's registers for host tests (the kind given at
// construction: its ID/CONFIG, its PMU's place, its fault bits): not hardware, and it runs no
// command stream. It keeps a log of every register access the driver makes, and models what the
// documentation says the registers do: ID/CONFIG (0 when "absent", as QEMU's placeholder),
// RESET -> STATUS.reset_status for a few reads and PROT = the requested levels, CMD run ->
// (the test's `on_run`, standing in for the NPU's work) STATUS cmd_end_reached | irq_raised,
// QREAD = QSIZE, PMCCNTR = `cycles`, CMD clear_irq -> irq_raised cleared, CMD's clock/power
// Q bits kept. Tests turn on failures: a reset that never completes, PROT ignoring the reset,
// fault bits at the end, no interrupt at all (the wait times out), an end without
// cmd_end_reached.
#pragma once

#include <stdint.h>

#include <functional>
#include <vector>

#include "../ethosu/driver.h"

namespace test {

class NpuRegisterModel {
 public:
  struct Access {
    bool write;
    uint32_t offset;
    uint32_t value;
  };

  // U55: a Corstone-300 FVP's U55-128; U85: a U85-128 as Vela 5.1.0 compiles for it.
  explicit NpuRegisterModel(ethosu::NpuKind kind = ethosu::NpuKind::EthosU55);

  // The hardware the model stands for.
  ethosu::NpuKind kind;
  bool present = true;
  uint32_t id;
  uint32_t config;
  uint64_t cycles = 0x123456789ull;
  // Failures to model.
  bool reset_never_completes = false;
  bool prot_ignores_reset = false;
  bool never_interrupts = false;
  bool end_without_cmd_end = false;
  uint32_t fault_bits = 0;  // STATUS bits raised with the interrupt
  // Stands in for the NPU's work at CMD run: gets the model (BASEPn via basep()).
  std::function<void(NpuRegisterModel&)> on_run;

  std::vector<Access> log;
  uint32_t runs = 0;
  uint32_t last_timeout_us = 0;

  // A platform of the model's kind whose hooks are this model's; `driver` gets the
  // "interrupt" in wait_for_irq.
  ethosu::NpuPlatform platform(uintptr_t base = 0x58102000);
  void attach(ethosu::Driver* driver) { driver_ = driver; }

  uint64_t basep(uint32_t region) const;
  uint32_t reg(uint32_t offset) const { return regs_[offset / 4]; }
  // Index in the log of the first write to `offset` (after `from`); -1 when none.
  long find_write(uint32_t offset, size_t from = 0) const;
  uint32_t status_reads_left = 0;  // reset in progress

 private:
  static uint32_t read32(void* ctx, uint32_t offset);
  static void write32(void* ctx, uint32_t offset, uint32_t value);
  static bool wait_for_irq(void* ctx, const volatile bool* irq_done, uint32_t timeout_us);
  uint32_t read(uint32_t offset);
  void write(uint32_t offset, uint32_t value);

  uint32_t regs_[0x1400 / 4] = {};  // up to the U85's PMU
  uint32_t cmd_q_ = 0xC;  // clock_q_enable | power_q_enable after reset
  bool irq_line_ = false;
  ethosu::Driver* driver_ = nullptr;
};

}  // namespace test
