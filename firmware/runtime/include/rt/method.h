// A loaded method (an ExecuTorch execution plan) ready to run.
//
// Method::load builds everything it needs into caller-given memory:
//   - metadata: the Value and Tensor tables, unboxed lists, the instruction
//     table with resolved kernels and delegates, delegate state;
//   - planned: the arenas the program's planned (non-constant) buffers are
//     laid out in, first fit, 16-byte aligned;
//   - scratch: temporary memory kernels and delegates may use during a call.
// It fails, with the sizes, when the memory does not fit; with the name when
// an operator has no kernel or a delegate no backend; and with a reason for
// anything in the program it does not support (dynamic shapes, non-default
// dim order, unsupported dtypes, external data). Every index the program
// holds is checked at load, so execute() trusts the tables it built.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/backend.h"
#include "rt/error.h"
#include "rt/kernel.h"
#include "rt/program.h"
#include "rt/value.h"

namespace rt {

struct MethodMemory {
  Span metadata;
  const Span* planned;  // one or more arenas for the planned buffers
  size_t num_planned;
  Span scratch;  // may be empty
};

struct MemoryUse {
  size_t metadata_used;
  size_t metadata_size;
  size_t planned_used;  // bytes of the planned arenas taken by the program's buffers
  size_t planned_size;
};

// How many instructions one execute() may run before it gives up: a program
// whose JumpFalse calls loop forever must fail, not hang the board.
constexpr uint32_t kDefaultMaxSteps = 1u << 24;

// Called with the index of every instruction execute() is about to run (a profiler reads its
// clock there; the time up to the next call, or to execute()'s return, is that instruction's).
using StepObserver = void (*)(void* context, size_t pc);

struct Step;          // one instruction, resolved (method.cpp)
struct DelegateSlot;  // one delegate, initialised (method.cpp)

class Method {
 public:
  Method() = default;

  // Load method `name` ("forward"); nullptr or "" picks "forward" if present, else the first.
  [[nodiscard]] static Result<Method> load(const Program& program, const char* name,
                                           const MethodMemory& memory);

  // Metadata bytes load() will take for this method (with the registered backends).
  [[nodiscard]] static Result<size_t> metadata_bytes_needed(const Program& program,
                                                            const char* name);

  [[nodiscard]] Error execute();

  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  // Input/output value i; nullptr out of range.
  const Value* input(size_t i) const;
  const Value* output(size_t i) const;
  // Copy `nbytes` into input tensor i (must be exactly its byte size).
  [[nodiscard]] Error set_input(size_t i, const void* data, size_t nbytes);

  size_t num_values() const { return num_values_; }
  size_t num_instructions() const { return num_steps_; }
  MemoryUse memory_use() const { return memory_use_; }
  void set_max_steps(uint32_t max_steps) { max_steps_ = max_steps; }
  void set_observer(StepObserver observer, void* context) {
    observer_ = observer;
    observer_context_ = context;
  }

 private:
  friend class MethodLoader;

  const void* plan_ = nullptr;  // fb::ExecutionPlan (names in reasons); set once loaded
  Value* values_ = nullptr;
  size_t num_values_ = 0;
  const int32_t* input_indices_ = nullptr;  // inside the program, checked at load
  size_t num_inputs_ = 0;
  const int32_t* output_indices_ = nullptr;
  size_t num_outputs_ = 0;
  KernelFn* kernels_ = nullptr;  // per operator
  size_t num_kernels_ = 0;
  DelegateSlot* delegates_ = nullptr;
  size_t num_delegates_ = 0;
  Step* steps_ = nullptr;
  size_t num_steps_ = 0;
  Span scratch_ = {nullptr, 0};
  MemoryUse memory_use_ = {0, 0, 0, 0};
  uint32_t max_steps_ = kDefaultMaxSteps;
  StepObserver observer_ = nullptr;
  void* observer_context_ = nullptr;
};

}  // namespace rt
