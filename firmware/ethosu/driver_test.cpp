// The Ethos-U55 driver against the register MODEL (not hardware): the invoke sequence,
// register by register, and every failure the driver reports.
#include "driver.h"

#include <string.h>

#include <vector>

#include "driver_job.h"
#include "npu_register_model.h"
#include "test_harness.h"

using ethosu::Driver;
using ethosu::Job;
using test::NpuRegisterModel;
using test::g_scratch;
using test::g_stream;
using test::g_weights;
using test::high;
using test::job;
using test::u32;
namespace reg = ethosu::reg;
namespace status = ethosu::status;

namespace {

constexpr uint32_t kCleanMark = 0xC1EA0000;  // cache hook calls, logged among the accesses
constexpr uint32_t kInvalidateMark = 0x1A7A0000;

void clean(void* ctx, const void*, size_t size) {
  static_cast<NpuRegisterModel*>(ctx)->log.push_back({true, kCleanMark, static_cast<uint32_t>(size)});
}
void invalidate(void* ctx, void*, size_t size) {
  static_cast<NpuRegisterModel*>(ctx)->log.push_back(
      {true, kInvalidateMark, static_cast<uint32_t>(size)});
}

struct Rig {
  NpuRegisterModel model;
  Driver driver;
  Rig() {
    ethosu::NpuPlatform p = model.platform();
    p.clean_dcache = clean;
    p.invalidate_dcache = invalidate;
    p.timeout_us = 1234;
    driver = Driver(p);
    model.attach(&driver);
  }
};

}  // namespace

TEST(driver_invoke_writes_the_documented_sequence) {
  Rig rig;
  CHECK_OK(rig.driver.check_config(0x1807, 0x10066001));
  rig.model.log.clear();
  CHECK_OK(rig.driver.invoke(job()));
  // The writes, in order (reads in between are the model's business).
  struct Expect {
    uint32_t offset;
    uint32_t value;
  };
  const Expect expected[] = {
      {reg::RESET, 3},  // privileged, secure
      {reg::AXI_LIMIT0, ethosu::kDefaultAxiLimit},
      {reg::AXI_LIMIT0 + 4, ethosu::kDefaultAxiLimit},
      {reg::AXI_LIMIT0 + 8, ethosu::kDefaultAxiLimit},
      {reg::AXI_LIMIT0 + 12, ethosu::kDefaultAxiLimit},
      {kCleanMark, sizeof(g_stream)},
      {kCleanMark, sizeof(g_weights)},
      {kCleanMark, sizeof(g_scratch)},  // region 2 is region 1's buffer: once
      {reg::QBASE0, u32(g_stream)},
      {reg::QBASE1, high(g_stream)},
      {reg::QSIZE, sizeof(g_stream)},
      {reg::QCONFIG, 2},
      {reg::REGIONCFG, 0x5553},
      {reg::BASEP0, u32(g_weights)},
      {reg::BASEP0 + 4, high(g_weights)},
      {reg::BASEP0 + 8, u32(g_scratch)},
      {reg::BASEP0 + 12, high(g_scratch)},
      {reg::BASEP0 + 16, u32(g_scratch)},
      {reg::BASEP0 + 20, high(g_scratch)},
      {reg::PMCR, 5},
      {reg::PMCNTENSET, 0x80000000u},
      {reg::CMD, 0xC | 1},  // run, clock/power Q kept
      {reg::CMD, 0xC | 2},  // the IRQ handler clears the interrupt
      {kInvalidateMark, sizeof(g_weights)},  // not said to be constant: it may be written
      {kInvalidateMark, sizeof(g_scratch)},
  };
  std::vector<NpuRegisterModel::Access> writes;
  for (const auto& a : rig.model.log) {
    if (a.write) writes.push_back(a);
  }
  CHECK_EQ(writes.size(), sizeof(expected) / sizeof(expected[0]));
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].offset != expected[i].offset || writes[i].value != expected[i].value) {
      printf("  write %zu: offset 0x%x value 0x%x, expected 0x%x 0x%x\n", i, writes[i].offset,
             writes[i].value, expected[i].offset, expected[i].value);
    }
    CHECK_EQ(writes[i].offset, expected[i].offset);
    CHECK_EQ(writes[i].value, expected[i].value);
  }
  CHECK_EQ(rig.model.runs, 1);
  CHECK_EQ(rig.model.last_timeout_us, 1234);
  CHECK_EQ(rig.driver.last_cycles(), 0x123456789ull);
  CHECK((rig.driver.last_status() & status::kCmdEndReached) != 0);
}

TEST(driver_reports_an_absent_npu) {
  Rig rig;
  rig.model.present = false;  // QEMU: reads 0, writes ignored
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x10066001), NoHardware);
  CHECK_REASON("no Ethos-U55 at 0x58102000 on this board (ID 0x00000000, CONFIG 0x00000000)");
  CHECK_ERROR(rig.driver.invoke(job()), NoHardware);
  CHECK_EQ(rig.model.runs, 0);
}

TEST(driver_refuses_another_npu_product) {
  Rig rig;
  rig.model.config = 0x10001807;  // product 1 (not a U55)
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x10066001), NoHardware);
  CHECK_REASON("is not an Ethos-U55 (CONFIG 0x10001807: product 1, not 0)");
}

TEST(driver_refuses_config_mismatches_with_both_values) {
  Rig rig;
  rig.model.config = 0x1808;  // 256 MACs
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x10066001), NotSupported);
  CHECK_REASON("for 128 MACs per cycle (CONFIG 0x00001807), the NPU has 256 (CONFIG 0x00001808)");
  rig.model.config = 0x1817;  // command stream version 1
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x10066001), NotSupported);
  CHECK_REASON("has version 0 (CONFIG 0x00001807), the NPU runs version 1 (CONFIG 0x00001817)");
  rig.model.config = 0x1807;
  CHECK_ERROR(rig.driver.check_config(0x20001807, 0x10066001), NotSupported);
  CHECK_REASON("for NPU product 2 (CONFIG 0x20001807), the NPU is product 0 (CONFIG 0x00001807)");
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x20066001), NotSupported);
  CHECK_REASON("architecture 2.0.6 (ID 0x20066001), the NPU is 1.0.6 (ID 0x10066001)");
  CHECK_ERROR(rig.driver.check_config(0x1807, 0x10166001), NotSupported);  // newer minor
  CHECK_REASON("architecture 1.1.6");
  CHECK_OK(rig.driver.check_config(0x1807, 0x10056001));  // older patch: fine
}

TEST(driver_reset_that_never_completes_is_bounded) {
  Rig rig;
  rig.model.reset_never_completes = true;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("soft reset did not complete after 100000 STATUS reads (STATUS 0x00000008)");
  CHECK_EQ(rig.model.runs, 0);
}

TEST(driver_reset_that_keeps_the_old_levels_is_refused) {
  Rig rig;
  rig.model.prot_ignores_reset = true;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("did not take the privilege/security level 0x3 after reset (PROT 0x00000000)");
  CHECK_EQ(rig.model.runs, 0);
}

TEST(driver_leaves_constants_a_loaded_program_wrote_back) {
  Rig rig;
  ethosu::Job j = job();
  j.constant_regions = 1u << 0;  // the weights
  j.constants_clean = true;
  CHECK_OK(rig.driver.invoke(j));
  std::vector<uint32_t> cleaned;
  std::vector<uint32_t> invalidated;
  for (const auto& a : rig.model.log) {
    if (a.offset == kCleanMark) cleaned.push_back(a.value);
    if (a.offset == kInvalidateMark) invalidated.push_back(a.value);
  }
  // The scratch alone, once each way: not the stream, not the weights.
  CHECK_EQ(cleaned.size(), 1u);
  CHECK_EQ(cleaned[0], sizeof(g_scratch));
  CHECK_EQ(invalidated.size(), 1u);
  CHECK_EQ(invalidated[0], sizeof(g_scratch));
  // Constant but not yet written back: cleaned by the job, still never invalidated.
  Rig again;
  j.constants_clean = false;
  CHECK_OK(again.driver.invoke(j));
  size_t cleans = 0;
  size_t invalidates = 0;
  for (const auto& a : again.model.log) {
    cleans += a.offset == kCleanMark;
    invalidates += a.offset == kInvalidateMark;
  }
  CHECK_EQ(cleans, 3u);
  CHECK_EQ(invalidates, 1u);
}

TEST(driver_times_out_and_resets) {
  Rig rig;
  rig.model.never_interrupts = true;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U55 did not finish within 1234 us (STATUS 0x00000001, QREAD 0 of 16 bytes)");
  CHECK_EQ(rig.model.last_timeout_us, 1234);
  CHECK(rig.model.find_write(reg::RESET, 1) > 0);  // stopped with a reset
}

TEST(driver_names_each_fault_bit) {
  struct Case {
    uint32_t bit;
    const char* name;
  };
  const Case cases[] = {{status::kBusStatus, "bus_status"},
                        {status::kCmdParseError, "cmd_parse_error"},
                        {status::kWdFault, "wd_fault"},
                        {status::kEccFault, "ecc_fault"}};
  for (const Case& c : cases) {
    Rig rig;
    rig.model.fault_bits = c.bit;
    CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
    CHECK_REASON("Ethos-U55 fault: ");
    CHECK_REASON(c.name);
    CHECK(rig.model.find_write(reg::RESET, 1) > 0);  // fault bits clear only by reset
    CHECK(rig.model.find_write(0x1A7A0000) < 0);      // nothing invalidated: no outputs
  }
  Rig rig;
  rig.model.fault_bits = status::kBusStatus | status::kEccFault;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U55 fault: bus_status ecc_fault (STATUS 0x00000106)");
}

TEST(driver_interrupt_without_cmd_end_is_a_failure) {
  Rig rig;
  rig.model.end_without_cmd_end = true;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("interrupt without cmd_end_reached (STATUS 0x00000002)");
}

TEST(driver_refuses_misaligned_jobs) {
  Rig rig;
  Job j = job();
  j.command_stream = g_stream + 4;
  j.command_stream_size = 12;
  CHECK_ERROR(rig.driver.invoke(j), InvalidArgument);
  CHECK_REASON("command stream at");
  CHECK_REASON("is not 16-byte aligned");
  j = job();
  j.regions[1] = g_scratch + 8;
  CHECK_ERROR(rig.driver.invoke(j), InvalidArgument);
  CHECK_REASON("region 1 at");
  j = job();
  j.command_stream_size = 6;
  CHECK_ERROR(rig.driver.invoke(j), InvalidArgument);
  CHECK_EQ(rig.model.runs, 0);
}

TEST(driver_runs_again_after_a_fault) {
  Rig rig;
  rig.model.fault_bits = status::kWdFault;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  rig.model.fault_bits = 0;
  CHECK_OK(rig.driver.invoke(job()));
  CHECK_EQ(rig.model.runs, 2);
}

TEST(driver_missing_hooks_are_an_error) {
  Driver d;
  uint32_t id;
  uint32_t config;
  CHECK_ERROR(d.probe(&id, &config), Internal);
}

TEST(driver_fault_names_fit_their_buffer) {
  char small[8];
  ethosu::fault_names(status::kFaultsU55, small, sizeof(small));
  CHECK(strlen(small) < sizeof(small));
  char big[64];
  ethosu::fault_names(0, big, sizeof(big));
  CHECK(big[0] == '\0');
}
