// A loaded program and its method, split into load / set inputs / execute / read outputs.
//
// The host link (firmware/link/) drives a Session; the memory is the caller's
// (RunnerMemory), the program bytes must outlive the load.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/arena.h"
#include "rt/error.h"
#include "rt/method.h"
#include "rt/program.h"
#include "rt/tensor.h"

namespace runner {

struct RunnerMemory {
  rt::Span metadata;
  rt::Span planned;
  rt::Span scratch;
  // Faster memory for the scratch (the NPU's arena), taken when the method's delegates fit it
  // (board.yaml slots.npu_arena); empty: always `scratch`.
  rt::Span npu_arena = {nullptr, 0};
};

// What the host says about an input tensor (a link TENSOR header).
struct TensorDesc {
  uint8_t dtype;
  uint8_t ndim;
  uint32_t nbytes;
  int32_t sizes[rt::kMaxDims];
};

struct RunTiming {
  uint32_t iterations;
  uint64_t total_ticks;
  uint64_t min_ticks;
  uint64_t max_ticks;
  uint64_t last_ticks;
};

class Session {
 public:
  explicit Session(const RunnerMemory& memory) : memory_(memory) {}
  Session(const Session&) = delete;  // the method points into program_
  Session& operator=(const Session&) = delete;

  // Verify the program and load its method (metadata, planned memory). Any previous load
  // is forgotten first. `program` must stay alive and unchanged while loaded.
  rt::Error load(rt::ConstBytes program);
  void unload();
  bool loaded() const { return loaded_; }
  uint64_t init_ticks() const { return init_ticks_; }
  rt::MemoryUse memory_use() const;
  // The scratch the loaded method has: npu_arena or scratch.
  rt::Span scratch_in_use() const { return scratch_in_use_; }

  size_t num_inputs() const { return loaded_ ? method_.num_inputs() : 0; }
  size_t num_outputs() const { return loaded_ ? method_.num_outputs() : 0; }

  // Input i as a writable tensor: NotSupported for a non-tensor or constant input.
  rt::Error input_tensor(size_t i, const rt::Tensor** tensor) const;
  // dtype, shape and byte size of `desc` against input i (InputMismatch with both).
  rt::Error check_input(size_t i, const TensorDesc& desc) const;
  // Bytes [offset, offset + size) of input i, written in place; the caller checks the order.
  rt::Error write_input(size_t i, size_t offset, const uint8_t* data, size_t size);

  // NotSupported (before a run) when an output is not a tensor.
  rt::Error check_outputs() const;
  // execute() `iterations` times; a failing iteration stops with its error (and its number
  // in the reason when iterations > 1).
  rt::Error execute(uint32_t iterations, RunTiming* timing);
  // Output i after a run: a tensor, or Internal when a kernel broke the value.
  rt::Error output_tensor(size_t i, const rt::Tensor** tensor) const;
  // Observe every instruction execute() runs (a profiler; nullptr: none). Kept across loads.
  void set_observer(rt::StepObserver observer, void* context) {
    observer_ = observer;
    observer_context_ = context;
    method_.set_observer(observer, context);
  }
  // The outputs are all tensors (what GET_OUTPUT after a failed RUN needs).
  bool outputs_are_tensors() const;

 private:
  RunnerMemory memory_;
  rt::Program program_;
  rt::Method method_;
  rt::StepObserver observer_ = nullptr;
  void* observer_context_ = nullptr;
  bool loaded_ = false;
  uint64_t init_ticks_ = 0;
  rt::Span scratch_in_use_ = {nullptr, 0};
};

}  // namespace runner
