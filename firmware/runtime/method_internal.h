// Internal pieces of method loading shared by method.cpp, values.cpp and memory_plan.cpp.
#pragma once

#include "rt/method.h"
#include "schema.h"

namespace rt {

// Every metadata block is allocated at this alignment, so the loader can
// compute exactly how much metadata a method needs before it allocates.
constexpr size_t kMetadataAlignment = 16;
// Planned buffers start at this alignment (MVE loads, NPU regions).
constexpr size_t kPlannedAlignment = 16;
// Arenas a caller may give for planned buffers.
constexpr size_t kMaxPlannedArenas = 4;

enum class StepKind : uint8_t { Kernel = 1, Delegate, Move, JumpFalse, Free };

struct Step {
  StepKind kind;
  uint32_t a;  // operator, delegate, moved-from value, condition value, freed value
  uint32_t b;  // moved-to value, jump destination
  Value** args;
  uint32_t nargs;
};

struct DelegateSlot {
  const Backend* backend;
  void* state;
};

// The largest byte count, element count or running sum of sizes the loader accepts: 31 bits,
// so that a program fails the same way on the 32-bit target and on the 64-bit host, whose
// size_t would hold far more. A flatbuffer may point many offsets at one table, so sums of
// vector sizes are not bounded by the program's size: every one goes through add_size.
constexpr size_t kMaxSize = 0x7FFFFFFF;

// Checked size arithmetic: false when the result would pass kMaxSize.
inline bool add_size(size_t a, size_t b, size_t* out) {
  if (a > kMaxSize || b > kMaxSize - a) {
    return false;
  }
  *out = a + b;
  return true;
}
inline bool mul_size(size_t a, size_t b, size_t* out) {
  if (a > kMaxSize || b > kMaxSize || (b != 0 && a > kMaxSize / b)) {
    return false;
  }
  *out = a * b;
  return true;
}

// What the value table needs, counted before anything is allocated.
struct ValueCounts {
  size_t values;
  size_t tensors;
  size_t int_items;     // IntList items (unboxed int64)
  size_t double_items;  // DoubleList items (copied, aligned)
  size_t tensor_refs;   // TensorList and OptionalTensorList items
};

struct ValueTables {
  Value* values;
  Tensor* tensors;
  int64_t* ints;
  double* doubles;
  Tensor** tensor_refs;
};

Error count_values(const fb::ExecutionPlan& plan, ValueCounts* counts);

// Fill `tables` (sized by count_values) from the plan; tensors get their data
// in `buffers` (planned, index = memory_id) or in the program's constants.
Error load_values(const Program& program, const fb::ExecutionPlan& plan, const Span* buffers,
                  size_t num_buffers, const ValueTables& tables);

// Bytes the planned buffers need (16-byte aligned each, buffer 0 excluded).
Error planned_bytes_needed(const fb::ExecutionPlan& plan, size_t* needed);

// Place buffers 1..n-1 of non_const_buffer_sizes in the arenas, first fit;
// buffers[0] stays empty (ExecuTorch reserves memory id 0).
Error lay_out_planned_buffers(const fb::ExecutionPlan& plan, const Span* arenas,
                              size_t num_arenas, Span* buffers, size_t* used,
                              size_t* capacity);

}  // namespace rt
