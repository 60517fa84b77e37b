// The host's Ethos-U "platform": no NPU at all. Every register reads 0 (as QEMU's placeholder at
// the NPU's address), writes go nowhere, no interrupt ever comes. host_link wraps it in the
// link's virtual U55, as QEMU's firmware does: the host's model answers the registers.
#pragma once

#include "driver.h"

namespace test {

ethosu::NpuPlatform absent_npu_platform();

}  // namespace test
