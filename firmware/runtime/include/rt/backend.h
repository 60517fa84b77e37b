// Delegates: how a backend (e.g. the Ethos-U NPU) plugs into the runtime.
//
// A program's DelegateCall names its backend by id ("EthosUBackend"). At
// method load the runtime looks the id up in a fixed-size registry, gives
// the backend zeroed state memory from the metadata arena (state_size bytes,
// 16-byte aligned) and calls init with the delegate's payload and compile
// specs. Then, still at load, it calls the optional prepare once per
// DelegateCall with that call's arguments (a backend checks the boundary
// tensors there, so a program it cannot run fails at load). At run time it
// calls execute with the call's arguments (inputs then outputs, as the
// program lists them). A delegate whose backend is not registered fails the
// load with Error::BackendMissing.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"
#include "rt/kernel.h"
#include "rt/value.h"

namespace rt {

// One compile spec of a delegate: a key and an opaque value, both pointing
// into the program (valid while the program buffer is).
struct CompileSpec {
  const char* key;  // not NUL-terminated
  size_t key_size;
  const uint8_t* value;
  size_t value_size;
};

struct BackendInitContext {
  const uint8_t* payload;  // the delegate's processed bytes, inside the program
  size_t payload_size;
  size_t delegate_index;   // in the plan's delegate list (what the host's audit calls index)
  const CompileSpec* specs;
  size_t num_specs;
  void* state;  // zeroed, 16-byte aligned, lives as long as the method
  size_t state_size;
};

// One DelegateCall of an initialised delegate, at load. The values are loaded (dtype, shape,
// planned data pointers) and stay put: what prepare checks holds for every execute.
struct BackendPrepareContext {
  void* state;           // the delegate's state, after init
  Value* const* args;    // the call's arguments, as execute will get them
  size_t nargs;
  const Value* values;   // the method's value table: args[k] - values is a value index
  uint8_t* scratch;      // the method's scratch, as execute's KernelContext will have it
  size_t scratch_size;
};

struct Backend {
  const char* id;     // as the program names it, e.g. "EthosUBackend"
  size_t state_size;  // per-delegate state the runtime reserves
  Error (*init)(const BackendInitContext& ctx);
  Error (*execute)(void* state, KernelContext& ctx, Value* const* args, size_t nargs);
  // Optional (nullptr): called by Method::load for each DelegateCall of this backend.
  Error (*prepare)(const BackendPrepareContext& ctx);
};

constexpr size_t kMaxBackends = 4;

// Add a backend (kept by pointer; it must outlive every method). Fails when
// the registry is full or the id is already taken.
Error register_backend(const Backend* backend);

// The backend registered under an id of `id_size` bytes; nullptr when none.
const Backend* find_backend(const char* id, size_t id_size);

size_t num_backends();

// Forget every registered backend (tests).
void clear_backends();

}  // namespace rt
