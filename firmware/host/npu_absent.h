// The host's Ethos-U "platform": no NPU at all. Every register reads 0 (as QEMU's placeholder at
// the NPU's address), writes go nowhere, no interrupt ever comes. host_link wraps it in the
// link's virtual NPU, as QEMU's firmware does: the host's model answers the registers. `kind`
// is the register layout the driver uses (the U85's for a Corstone-320 stand-in).
#pragma once

#include "driver.h"

namespace test {

ethosu::NpuPlatform absent_npu_platform(ethosu::NpuKind kind = ethosu::NpuKind::EthosU55);

}  // namespace test
