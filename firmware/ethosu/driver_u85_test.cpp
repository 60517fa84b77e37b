// The driver on an Ethos-U85 (Corstone-320's NPU), against the register MODEL in its U85 mode
// (not hardware): what differs from the U55 (driver_test.cpp has the shared sequence and
// failures): the AXI set-up (MEM_ATTR0-3, AXI_SRAM, AXI_EXT instead of AXI_LIMIT0-3), the PMU
// at 0x1180, product 2 and the AXI port counts in CONFIG, branch_fault, and the name in every
// message. The CONFIG/ID words are those Vela 5.1.0 writes into a payload's OPTIMIZER_CONFIG.
#include <string.h>

#include <vector>

#include "driver.h"
#include "driver_job.h"
#include "npu_register_model.h"
#include "test_harness.h"

using ethosu::Driver;
using ethosu::Job;
using ethosu::NpuKind;
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

constexpr uintptr_t kBase = 0x50004000;  // Corstone-320's NPU (Secure alias)
constexpr uint32_t kId = 0x20007000;     // architecture 2.0.0
// CONFIG of each U85 configuration (Vela 5.1.0's OPTIMIZER_CONFIG words).
constexpr uint32_t kU85_128 = 0x20000117;
constexpr uint32_t kU85_256 = 0x20000118;
constexpr uint32_t kU85_512 = 0x20001119;
constexpr uint32_t kU85_1024 = 0x2000251a;
constexpr uint32_t kU85_2048 = 0x2000261b;

struct Rig {
  NpuRegisterModel model{NpuKind::EthosU85};
  Driver driver;
  explicit Rig(uint32_t config = kU85_128) {
    model.config = config;
    ethosu::NpuPlatform p = model.platform(kBase);
    p.timeout_us = 1234;
    driver = Driver(p);
    model.attach(&driver);
  }
};

}  // namespace

TEST(u85_default_platform_is_arms_driver_defaults) {
  ethosu::NpuPlatform p = ethosu::default_platform(kBase, NpuKind::EthosU85);
  CHECK(p.kind == NpuKind::EthosU85);
  CHECK_EQ(p.mem_attr[0], 0);  // SRAM port
  CHECK_EQ(p.mem_attr[1], 0);
  CHECK_EQ(p.mem_attr[2], 4);  // EXT port
  CHECK_EQ(p.mem_attr[3], 4);
  CHECK_EQ(p.qconfig, 2);          // the command stream through MEM_ATTR2 (EXT)
  CHECK_EQ(p.regioncfg, 0x5553);   // weights MEM_ATTR3 (EXT), scratch MEM_ATTR0 (SRAM), rest 1
  CHECK_EQ(p.axi_sram, 0x00020F0B);  // 12 reads, 16 writes, 256-byte bursts
  CHECK_EQ(p.axi_ext, 0x00021F3F);   // 64 reads, 32 writes, 256-byte bursts
  CHECK(strcmp(ethosu::layout_of(NpuKind::EthosU85).name, "Ethos-U85") == 0);
  CHECK_EQ(ethosu::layout_of(NpuKind::EthosU85).product, 2);
  CHECK_EQ(ethosu::layout_of(NpuKind::EthosU85).pmu, 0x1180);
}

TEST(u85_invoke_writes_the_documented_sequence) {
  Rig rig;
  CHECK_OK(rig.driver.check_config(kU85_128, kId));
  rig.model.log.clear();
  CHECK_OK(rig.driver.invoke(job()));
  struct Expect {
    uint32_t offset;
    uint32_t value;
  };
  const Expect expected[] = {
      {reg::RESET, 3},  // privileged, secure
      {reg::MEM_ATTR0, 0},
      {reg::MEM_ATTR0 + 4, 0},
      {reg::MEM_ATTR0 + 8, 4},
      {reg::MEM_ATTR0 + 12, 4},
      {reg::AXI_SRAM, ethosu::kDefaultAxiSram},
      {reg::AXI_EXT, ethosu::kDefaultAxiExt},
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
      {0x1180, 5},            // PMCR: cnt_en | cycle_cnt_rst
      {0x1184, 0x80000000u},  // PMCNTENSET: the cycle counter
      {reg::CMD, 0xC | 1},
      {reg::CMD, 0xC | 2},
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
  CHECK(rig.model.find_write(reg::PMCR) < 0);         // nothing at the U55's PMU (0x180)
  CHECK_EQ(rig.driver.last_cycles(), 0x123456789ull);      // read at 0x11A0/0x11A4
}

TEST(u85_takes_each_configuration_compiled_for_it) {
  const uint32_t configs[] = {kU85_128, kU85_256, kU85_512, kU85_1024, kU85_2048};
  for (uint32_t config : configs) {
    Rig rig(config);
    CHECK_OK(rig.driver.check_config(config, kId));
  }
}

TEST(u85_refuses_a_stream_for_another_configuration_with_both_values) {
  Rig rig(kU85_256);
  CHECK_ERROR(rig.driver.check_config(kU85_128, kId), NotSupported);
  CHECK_REASON("for 128 MACs per cycle (CONFIG 0x20000117), the NPU has 256 (CONFIG 0x20000118)");
  // Same MACs, other AXI ports (an SoC built with four SRAM ports and an EXT port).
  CHECK_ERROR(rig.driver.check_config(0x20000618, kId), NotSupported);
  CHECK_REASON(
      "for 4 SRAM and 2 EXT AXI ports (CONFIG 0x20000618), the NPU has 2 and 1 (CONFIG "
      "0x20000118)");
  CHECK_ERROR(rig.driver.check_config(kU85_256 | (1u << 27), kId), NotSupported);
  CHECK_REASON("needs the custom DMA (CONFIG 0x28000118), the NPU has none");
  // A U55 stream on the U85: the product, by number.
  CHECK_ERROR(rig.driver.check_config(0x00001807, 0x10066001), NotSupported);
  CHECK_REASON("for NPU product 0 (CONFIG 0x00001807), the NPU is product 2 (CONFIG 0x20000118)");
  CHECK_ERROR(rig.driver.check_config(kU85_256, 0x10066001), NotSupported);
  CHECK_REASON("architecture 1.0.6 (ID 0x10066001), the NPU is 2.0.0 (ID 0x20007000)");
  CHECK_ERROR(rig.driver.check_config(kU85_256, 0x20107000), NotSupported);  // newer minor
  CHECK_REASON("architecture 2.1.0");
}

TEST(u85_driver_refuses_a_u55_and_an_absent_npu_by_name) {
  Rig rig;
  rig.model.config = 0x00001807;  // a U55 where the board says U85
  CHECK_ERROR(rig.driver.check_config(kU85_128, kId), NoHardware);
  CHECK_REASON("the NPU at 0x50004000 is not an Ethos-U85 (CONFIG 0x00001807: product 0, not 2)");
  rig.model.present = false;
  CHECK_ERROR(rig.driver.invoke(job()), NoHardware);
  CHECK_REASON("no Ethos-U85 at 0x50004000 on this board (ID 0x00000000, CONFIG 0x00000000)");
  CHECK_EQ(rig.model.runs, 0);
}

TEST(u85_faults_are_named_and_reset) {
  Rig rig;
  rig.model.fault_bits = status::kBranchFault;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U85 fault: branch_fault (STATUS 0x00000202)");
  CHECK(rig.model.find_write(reg::RESET, 1) > 0);
  Rig both;
  both.model.fault_bits = status::kBusStatus | status::kEccFault;
  CHECK_ERROR(both.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U85 fault: bus_status ecc_fault (STATUS 0x00000106)");
}

TEST(u85_status_bit_7_is_no_watchdog_fault) {
  // Bit 7 is the U55's wd_fault and reserved on the U85: not named as a fault there (the
  // model raises no cmd_end_reached with it, which is the failure reported).
  Rig rig;
  rig.model.fault_bits = status::kWdFault;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U85 interrupt without cmd_end_reached (STATUS 0x00000082)");
}

TEST(u85_timeout_names_the_u85) {
  Rig rig;
  rig.model.never_interrupts = true;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  CHECK_REASON("Ethos-U85 did not finish within 1234 us (STATUS 0x00000001, QREAD 0 of 16 bytes)");
}

TEST(u85_runs_again_after_a_fault) {
  Rig rig;
  rig.model.fault_bits = status::kCmdParseError;
  CHECK_ERROR(rig.driver.invoke(job()), DelegateFailed);
  rig.model.fault_bits = 0;
  CHECK_OK(rig.driver.invoke(job()));
  CHECK_EQ(rig.model.runs, 2);
}
