// The host's Ethos-U "platform": no NPU at all. Every register reads 0 (as QEMU's placeholder at
// the NPU's address), writes go nowhere, no interrupt ever comes. host_runner and host_link
// register the backend with it, so a delegated program behaves as on QEMU: NoHardware at load,
// or (host_link, wrapped in the link's virtual U55) the host's model answers the registers.
#pragma once

#include "driver.h"

namespace test {

ethosu::NpuPlatform absent_npu_platform();

}  // namespace test
