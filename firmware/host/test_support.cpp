// Host-test support (see test_support.h). Host only: uses the heap and the
// flatbuffers builder, which the target never does.
#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program_generated.h"
#include "rt/backend.h"

namespace fb = executorch_flatbuffer;

namespace test {

void Bytes::Free::operator()(uint8_t* p) const { free(p); }

Bytes::Bytes(size_t size)
    : storage_(static_cast<uint8_t*>(aligned_alloc(16, (size + 16) & ~size_t{15}))), size_(size) {
  memset(storage_.get(), 0, (size + 16) & ~size_t{15});
}

Bytes::Bytes(const void* data, size_t size) : Bytes(size) {
  if (size > 0) {
    memcpy(storage_.get(), data, size);
  }
}

Bytes read_file(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Bytes();
  }
  std::vector<uint8_t> data;
  uint8_t chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
    data.insert(data.end(), chunk, chunk + n);
  }
  fclose(f);
  return Bytes(data.data(), data.size());
}

std::string capture_stdout(const std::function<void()>& fn) {
  fflush(stdout);
  FILE* sink = tmpfile();
  int saved = dup(fileno(stdout));
  dup2(fileno(sink), fileno(stdout));
  fn();
  fflush(stdout);
  dup2(saved, fileno(stdout));
  close(saved);
  std::string text;
  rewind(sink);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), sink)) > 0) {
    text.append(chunk, n);
  }
  fclose(sink);
  return text;
}

// ---- ProgramBuilder ---------------------------------------------------------------------

struct ProgramBuilder::ValueSpec {
  fb::KernelTypes type = fb::KernelTypes::Null;
  TensorSpec tensor;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::vector<int64_t> longs;
  std::vector<int32_t> ints;
  std::vector<double> doubles;
  bool empty = false;
  int alias_of = -1;  // >= 0: the EValue table of that value, again
};

struct ProgramBuilder::InstructionSpec {
  fb::InstructionArguments type = fb::InstructionArguments::NONE;
  int repeat_of = -1;  // >= 0: the table of that instruction, again
  int32_t a = 0;
  int32_t b = 0;
  std::vector<int32_t> args;
};

struct ProgramBuilder::DelegateSpec {
  std::string id;
  std::vector<uint8_t> payload;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> specs;
};

namespace {
template <typename T>
int append(std::vector<std::shared_ptr<T>>& list, std::shared_ptr<T> item) {
  list.push_back(std::move(item));
  return static_cast<int>(list.size() - 1);
}
}  // namespace

int ProgramBuilder::tensor(const TensorSpec& spec) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::Tensor;
  v->tensor = spec;
  return append(values_, v);
}

int ProgramBuilder::planned(rt::ScalarType dtype, std::vector<int32_t> sizes, uint64_t offset) {
  TensorSpec spec;
  spec.dtype = dtype;
  spec.sizes = std::move(sizes);
  spec.offset = offset;
  return tensor(spec);
}

int ProgramBuilder::constant(rt::ScalarType dtype, std::vector<int32_t> sizes, const void* data,
                             size_t nbytes) {
  if (constants_.empty()) {
    constants_.emplace_back();  // index 0 is reserved for non-constants
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  constants_.emplace_back(bytes, bytes + nbytes);
  TensorSpec spec;
  spec.dtype = dtype;
  spec.sizes = std::move(sizes);
  spec.planned = false;
  spec.data_buffer_idx = static_cast<uint32_t>(constants_.size() - 1);
  return tensor(spec);
}

int ProgramBuilder::int_value(int64_t value) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::Int;
  v->i = value;
  return append(values_, v);
}

int ProgramBuilder::bool_value(bool value) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::Bool;
  v->b = value;
  return append(values_, v);
}

int ProgramBuilder::double_value(double value) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::Double;
  v->d = value;
  return append(values_, v);
}

int ProgramBuilder::none() { return append(values_, std::make_shared<ValueSpec>()); }

int ProgramBuilder::int_list(std::vector<int64_t> item_values) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::IntList;
  v->longs = std::move(item_values);
  return append(values_, v);
}

int ProgramBuilder::double_list(std::vector<double> items) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::DoubleList;
  v->doubles = std::move(items);
  return append(values_, v);
}

int ProgramBuilder::tensor_list(std::vector<int32_t> item_values) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::TensorList;
  v->ints = std::move(item_values);
  return append(values_, v);
}

int ProgramBuilder::optional_tensor_list(std::vector<int32_t> item_values) {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::OptionalTensorList;
  v->ints = std::move(item_values);
  return append(values_, v);
}

int ProgramBuilder::empty_value() {
  auto v = std::make_shared<ValueSpec>();
  v->type = fb::KernelTypes::IntList;
  v->empty = true;
  return append(values_, v);
}

int ProgramBuilder::alias(int value, size_t count) {
  int first = static_cast<int>(values_.size());
  for (size_t i = 0; i < count; ++i) {
    auto v = std::make_shared<ValueSpec>();
    v->type = values_[static_cast<size_t>(value)]->type;
    v->alias_of = value;
    values_.push_back(v);
  }
  return first;
}

int ProgramBuilder::op(const std::string& name, const std::string& overload) {
  ops_.emplace_back(name, overload);
  return static_cast<int>(ops_.size() - 1);
}

int ProgramBuilder::delegate(const std::string& id, std::vector<uint8_t> payload,
                             std::vector<std::pair<std::string, std::vector<uint8_t>>> specs) {
  auto d = std::make_shared<DelegateSpec>();
  d->id = id;
  d->payload = std::move(payload);
  d->specs = std::move(specs);
  return append(delegates_, d);
}

void ProgramBuilder::kernel_call(int op, std::vector<int32_t> args) {
  auto i = std::make_shared<InstructionSpec>();
  i->type = fb::InstructionArguments::KernelCall;
  i->a = op;
  i->args = std::move(args);
  instructions_.push_back(i);
}

void ProgramBuilder::delegate_call(int delegate, std::vector<int32_t> args) {
  auto i = std::make_shared<InstructionSpec>();
  i->type = fb::InstructionArguments::DelegateCall;
  i->a = delegate;
  i->args = std::move(args);
  instructions_.push_back(i);
}

void ProgramBuilder::move(int from, int to) {
  auto i = std::make_shared<InstructionSpec>();
  i->type = fb::InstructionArguments::MoveCall;
  i->a = from;
  i->b = to;
  instructions_.push_back(i);
}

void ProgramBuilder::jump_false(int cond, int destination) {
  auto i = std::make_shared<InstructionSpec>();
  i->type = fb::InstructionArguments::JumpFalseCall;
  i->a = cond;
  i->b = destination;
  instructions_.push_back(i);
}

void ProgramBuilder::free_value(int value) {
  auto i = std::make_shared<InstructionSpec>();
  i->type = fb::InstructionArguments::FreeCall;
  i->a = value;
  instructions_.push_back(i);
}

void ProgramBuilder::repeat_last_instruction(size_t count) {
  int last = static_cast<int>(instructions_.size()) - 1;
  for (size_t i = 0; i < count; ++i) {
    auto repeat = std::make_shared<InstructionSpec>();
    repeat->repeat_of = last;
    instructions_.push_back(repeat);
  }
}

Bytes ProgramBuilder::finish() const {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::EValue>> values;
  for (const auto& v : values_) {
    if (v->alias_of >= 0) {
      values.push_back(values[static_cast<size_t>(v->alias_of)]);
      continue;
    }
    flatbuffers::Offset<void> val = 0;
    switch (v->type) {
      case fb::KernelTypes::Null:
        val = fb::CreateNull(b).Union();
        break;
      case fb::KernelTypes::Int:
        val = fb::CreateInt(b, v->i).Union();
        break;
      case fb::KernelTypes::Bool:
        val = fb::CreateBool(b, v->b).Union();
        break;
      case fb::KernelTypes::Double:
        val = fb::CreateDouble(b, v->d).Union();
        break;
      case fb::KernelTypes::IntList:
        val = fb::CreateIntListDirect(b, &v->longs).Union();
        break;
      case fb::KernelTypes::DoubleList:
        val = fb::CreateDoubleListDirect(b, &v->doubles).Union();
        break;
      case fb::KernelTypes::TensorList:
        val = fb::CreateTensorListDirect(b, &v->ints).Union();
        break;
      case fb::KernelTypes::OptionalTensorList:
        val = fb::CreateOptionalTensorListDirect(b, &v->ints).Union();
        break;
      case fb::KernelTypes::Tensor: {
        const TensorSpec& t = v->tensor;
        std::vector<uint8_t> order = t.dim_order;
        if (order.empty()) {
          for (size_t d = 0; d < t.sizes.size(); ++d) {
            order.push_back(static_cast<uint8_t>(d));
          }
        }
        flatbuffers::Offset<fb::AllocationDetails> allocation = 0;
        if (t.planned) {
          allocation = fb::CreateAllocationDetails(b, t.memory_id,
                                                   static_cast<uint32_t>(t.offset),
                                                   static_cast<uint32_t>(t.offset >> 32));
        }
        int8_t dtype = t.raw_dtype >= 0 ? t.raw_dtype : static_cast<int8_t>(t.dtype);
        val = fb::CreateTensorDirect(b, static_cast<fb::ScalarType>(dtype), 0, &t.sizes, &order,
                                     false, t.data_buffer_idx, allocation, 0,
                                     static_cast<fb::TensorShapeDynamism>(t.dynamism))
                  .Union();
        break;
      }
      default:
        break;
    }
    if (v->empty) {
      val = 0;
    }
    values.push_back(fb::CreateEValue(b, v->type, val));
  }
  std::vector<flatbuffers::Offset<fb::Instruction>> instructions;
  for (const auto& i : instructions_) {
    if (i->repeat_of >= 0) {
      instructions.push_back(instructions[static_cast<size_t>(i->repeat_of)]);
      continue;
    }
    flatbuffers::Offset<void> args = 0;
    switch (i->type) {
      case fb::InstructionArguments::KernelCall:
        args = fb::CreateKernelCallDirect(b, i->a, &i->args).Union();
        break;
      case fb::InstructionArguments::DelegateCall:
        args = fb::CreateDelegateCallDirect(b, i->a, &i->args).Union();
        break;
      case fb::InstructionArguments::MoveCall:
        args = fb::CreateMoveCall(b, i->a, i->b).Union();
        break;
      case fb::InstructionArguments::JumpFalseCall:
        args = fb::CreateJumpFalseCall(b, i->a, i->b).Union();
        break;
      case fb::InstructionArguments::FreeCall:
        args = fb::CreateFreeCall(b, i->a).Union();
        break;
      default:
        break;
    }
    instructions.push_back(fb::CreateInstruction(b, i->type, args));
  }
  std::vector<flatbuffers::Offset<fb::Chain>> chains;
  for (int c = 0; c < chains_; ++c) {
    chains.push_back(fb::CreateChainDirect(b, &inputs_, &outputs_, &instructions));
  }
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const auto& op : ops_) {
    ops.push_back(fb::CreateOperatorDirect(b, op.first.c_str(), op.second.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::BackendDelegateInlineData>> payloads;
  std::vector<flatbuffers::Offset<fb::BackendDelegate>> delegates;
  for (const auto& d : delegates_) {
    payloads.push_back(fb::CreateBackendDelegateInlineDataDirect(b, &d->payload));
    auto ref = fb::CreateBackendDelegateDataReference(b, fb::DataLocation::INLINE,
                                                      static_cast<uint32_t>(payloads.size() - 1));
    std::vector<flatbuffers::Offset<fb::CompileSpec>> specs;
    for (const auto& spec : d->specs) {
      specs.push_back(fb::CreateCompileSpecDirect(b, spec.first.c_str(), &spec.second));
    }
    delegates.push_back(fb::CreateBackendDelegateDirect(b, d->id.c_str(), ref, &specs));
  }
  auto plan = fb::CreateExecutionPlanDirect(b, "forward", 0, &values, &inputs_, &outputs_,
                                            &chains, &ops, &delegates, &buffer_sizes_);
  std::vector<flatbuffers::Offset<fb::ExecutionPlan>> plans = {plan};
  std::vector<flatbuffers::Offset<fb::Buffer>> constants;
  for (const auto& c : constants_) {
    constants.push_back(fb::CreateBufferDirect(b, &c));
  }
  auto program = fb::CreateProgramDirect(b, 0, &plans, &constants, &payloads);
  fb::FinishProgramBuffer(b, program);
  return Bytes(b.GetBufferPointer(), b.GetSize());
}

}  // namespace test
