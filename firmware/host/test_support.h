// Host-test support: programs built with the flatbuffers builder, aligned
// buffers, files, and placeholder kernels (test-only; never in kernels/).
#pragma once

#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rt/backend.h"
#include "rt/kernel.h"
#include "rt/scalar_type.h"

namespace test {

// Bytes at a 16-byte aligned address (the runtime reads programs in place).
class Bytes {
 public:
  Bytes() = default;
  explicit Bytes(size_t size);
  Bytes(const void* data, size_t size);
  uint8_t* data() const { return storage_.get(); }
  size_t size() const { return size_; }
  Bytes copy() const { return Bytes(data(), size()); }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> storage_;
  size_t size_ = 0;
};

// The whole file; an empty Bytes when it cannot be read.
Bytes read_file(const std::string& path);

// A program from the pytest fixture's folder (--programs DIR); empty when absent.
Bytes fixture_program(const char* name);

// Builds ExecuTorch programs value by value, for tests that need a precise
// (often broken) program. Indices returned are value / operator / delegate indices.
class ProgramBuilder {
 public:
  struct TensorSpec {
    rt::ScalarType dtype = rt::ScalarType::Float;
    std::vector<int32_t> sizes;
    bool planned = true;
    uint32_t memory_id = 1;
    uint64_t offset = 0;
    uint32_t data_buffer_idx = 0;
    std::vector<uint8_t> dim_order;  // empty: 0..dim-1
    int8_t dynamism = 0;             // 0 static
    int8_t raw_dtype = -1;           // >= 0: write this scalar type code instead of dtype
  };

  int tensor(const TensorSpec& spec);
  int planned(rt::ScalarType dtype, std::vector<int32_t> sizes, uint64_t offset);
  // A constant in the legacy inline constant_buffer; returns the value index.
  int constant(rt::ScalarType dtype, std::vector<int32_t> sizes, const void* data, size_t nbytes);
  int int_value(int64_t v);
  int bool_value(bool v);
  int double_value(double v);
  int none();
  int int_list(std::vector<int64_t> item_values);
  int double_list(std::vector<double> items);
  int tensor_list(std::vector<int32_t> item_values);
  int optional_tensor_list(std::vector<int32_t> item_values);
  int empty_value();  // an EValue whose union type is set but whose table is absent
  // `count` more values that are the EValue table of `value` again (flatbuffers lets many
  // offsets point at one table); returns the index of the first.
  int alias(int value, size_t count);

  int op(const std::string& name, const std::string& overload);
  int delegate(const std::string& id, std::vector<uint8_t> payload,
               std::vector<std::pair<std::string, std::vector<uint8_t>>> specs);

  void kernel_call(int op, std::vector<int32_t> args);
  void delegate_call(int delegate, std::vector<int32_t> args);
  void move(int from, int to);
  void jump_false(int cond, int destination);
  void free_value(int value);
  // The last instruction's table `count` more times (shared, like alias()).
  void repeat_last_instruction(size_t count);

  void set_inputs(std::vector<int32_t> values) { inputs_ = std::move(values); }
  void set_outputs(std::vector<int32_t> values) { outputs_ = std::move(values); }
  // non_const_buffer_sizes; entry 0 is reserved and ignored.
  void set_buffer_sizes(std::vector<int64_t> sizes) { buffer_sizes_ = std::move(sizes); }
  void set_chains(int count) { chains_ = count; }

  Bytes finish() const;

 private:
  struct ValueSpec;
  struct InstructionSpec;
  struct DelegateSpec;
  std::vector<std::shared_ptr<ValueSpec>> values_;
  std::vector<std::pair<std::string, std::string>> ops_;
  std::vector<std::shared_ptr<DelegateSpec>> delegates_;
  std::vector<std::shared_ptr<InstructionSpec>> instructions_;
  std::vector<std::vector<uint8_t>> constants_;
  std::vector<int32_t> inputs_;
  std::vector<int32_t> outputs_;
  std::vector<int64_t> buffer_sizes_ = {0, 1024};
  int chains_ = 1;
};

// Everything `fn` writes to stdout (platform_write on the host), as one string.
std::string capture_stdout(const std::function<void()>& fn);

// Placeholder kernels in this binary's kKernelTable (test_kernels.cpp):
//   aten::add.out       float out = self + alpha * other (args: self, other, alpha, out, ret)
//   test::fail.default  always fails with KernelFailed (also as "test::fail", no overload)
//   test::retag.default  turns its first argument into an Int value (a broken kernel)
//   test::record.default  remembers its arguments in g_recorded_args
extern rt::Value* const* g_recorded_args;
extern size_t g_recorded_nargs;

// A delegate backend for tests, id "TestBackend": init keeps the payload
// size and spec count in its state; execute copies args[0] into args[1].
struct TestBackendState {
  size_t payload_size;
  size_t num_specs;
  uint32_t executions;
};
extern const rt::Backend kTestBackend;

}  // namespace test
