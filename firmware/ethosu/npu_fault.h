// Test variants of an NPU platform: the wrapped platform with one bug of the kind a driver or a
// board port makes, so tests can see that a run on it fails or gives a wrong result and never
// passes (host_link --npu-fault NAME; scons test_hook=npu_fault_NAME).
//   wrong_base    the scratch regions' base pointers (BASEP1, BASEP2) 16 bytes off
//   wrong_weights the weights region's base pointer (BASEP0) 16 bytes off
//   wrong_region  region 1's base pointer written to region 3's registers
//   wrong_qsize   QSIZE 16 bytes short of the command stream
//   no_start      the CMD write that starts the NPU never reaches it
#pragma once

#include "driver.h"

namespace ethosu {

enum class NpuFault { None, WrongBase, WrongWeights, WrongRegion, WrongQsize, NoStart };

// NpuFault::None for an unknown name (and for "none").
NpuFault npu_fault_named(const char* name);

// `inner` with `fault` built in; keeps a copy of `inner` (one faulty platform per program).
NpuPlatform faulty_platform(const NpuPlatform& inner, NpuFault fault);

}  // namespace ethosu
