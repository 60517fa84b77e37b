// Method loading (operators, delegates, instructions, metadata sizing) and execution.
#include <string.h>

#include "method_internal.h"

namespace rt {

using flatbuffers::uoffset_t;

namespace {

bool operator_matches(const char* registered, const fb::Operator& op) {
  const char* name = op.name()->c_str();
  size_t name_len = op.name()->size();
  size_t overload_len = op.overload() == nullptr ? 0 : op.overload()->size();
  size_t registered_len = strlen(registered);
  if (overload_len == 0) {
    return registered_len == name_len && memcmp(registered, name, name_len) == 0;
  }
  return registered_len == name_len + 1 + overload_len &&
         memcmp(registered, name, name_len) == 0 && registered[name_len] == '.' &&
         memcmp(registered + name_len + 1, op.overload()->c_str(), overload_len) == 0;
}

const fb::ExecutionPlan* find_plan(const Program& program, const char* name) {
  const auto* plans = program_root(program)->execution_plan();
  const bool any = name == nullptr || name[0] == '\0';
  const char* wanted = any ? "forward" : name;
  size_t wanted_len = strlen(wanted);
  for (uoffset_t i = 0; i < plans->size(); ++i) {
    const fb::ExecutionPlan* plan = plans->Get(i);
    if (plan->name() != nullptr && plan->name()->size() == wanted_len &&
        memcmp(plan->name()->data(), wanted, wanted_len) == 0) {
      return plan;
    }
  }
  return any ? plans->Get(0) : nullptr;
}

const char* overload_of(const fb::Operator& op) {
  return op.overload() == nullptr ? "" : op.overload()->c_str();
}

// "." between name and overload, or nothing when the overload is empty ("test::op").
const char* overload_dot(const fb::Operator& op) { return overload_of(op)[0] == '\0' ? "" : "."; }

// Kernels whose every output element comes from the input elements at the same place: they
// compute right on tensors in any dim order, so long as all of them lie in the same one.
const char* const kAnyOrderKernels[] = {
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
};

bool row_major(const Tensor& t) {
  for (uint8_t d = 0; d < t.dim; ++d) {
    if (t.dim_order[d] != d) {
      return false;
    }
  }
  return true;
}

bool same_order(const Tensor& a, const Tensor& b) {
  return a.dim == b.dim && memcmp(a.dim_order, b.dim_order, a.dim) == 0;
}

// The CPU kernels index their tensors row-major: a kernel call given a tensor in another dim
// order (a channels-last program input) would compute on misplaced elements, so it is refused
// at load, unless the kernel is one of kAnyOrderKernels and all its tensors share the order.
Error check_kernel_order(const fb::Operator& op, Value* const* args, size_t nargs, size_t pc) {
  const Tensor* first = nullptr;
  const Tensor* reordered = nullptr;
  bool mixed = false;
  for (size_t k = 0; k < nargs; ++k) {
    const Value& arg = *args[k];
    ArrayRef<Tensor*> tensors{nullptr, 0};
    Tensor* one = arg.tag == Tag::Tensor ? arg.u.t : nullptr;
    if (one != nullptr) {
      tensors = ArrayRef<Tensor*>{&one, 1};
    } else if (arg.tag == Tag::TensorList || arg.tag == Tag::OptionalTensorList) {
      tensors = arg.u.tensor_list;
    }
    for (size_t i = 0; i < tensors.size; ++i) {
      const Tensor* t = tensors[i];
      if (t == nullptr) {
        continue;
      }
      first = first == nullptr ? t : first;
      mixed = mixed || !same_order(*first, *t);
      reordered = reordered == nullptr && !row_major(*t) ? t : reordered;
    }
  }
  if (reordered == nullptr) {
    return Error::Ok;
  }
  bool any_order = false;
  for (const char* name : kAnyOrderKernels) {
    any_order = any_order || operator_matches(name, op);
  }
  RT_CHECK(any_order && !mixed, Error::NotSupported,
           "instruction %lu: %s%s%s takes a tensor in a non-row-major dim order (channels-last), "
           "which its kernel would read row-major", ul(pc), op.name()->c_str(), overload_dot(op),
           overload_of(op));
  return Error::Ok;
}


// Everything load() resolves before it allocates, so that a missing kernel or
// backend is reported as such, whatever the arena sizes.
struct Resolution {
  const fb::ExecutionPlan* plan;
  const fb::Chain* chain;  // nullptr when the plan has no chain
  ValueCounts counts;
  size_t num_operators;
  size_t num_delegates;
  size_t num_specs;
  size_t num_steps;
  size_t num_args;
  size_t delegate_state;  // bytes, each state 16-byte aligned
  size_t metadata_needed;
};

// `field` of `where` `i` ("instruction 3: operator 7 ...") must be in [0, limit).
Error check_index(const char* where, size_t i, const char* field, int32_t value, size_t limit) {
  RT_CHECK(value >= 0 && static_cast<size_t>(value) < limit, Error::InvalidProgram,
           "%s %lu: %s %ld out of range (%lu)", where, ul(i), field, static_cast<long>(value),
           ul(limit));
  return Error::Ok;
}

Error check_value_indices(const flatbuffers::Vector<int32_t>* indices, size_t num_values,
                          const char* what) {
  for (size_t i = 0; i < vector_size(indices); ++i) {
    RT_TRY(check_index(what, i, "value", indices->Get(static_cast<uoffset_t>(i)), num_values));
  }
  return Error::Ok;
}

Error resolve_operators(const fb::ExecutionPlan& plan, KernelFn* kernels) {
  const auto* operators = plan.operators();
  for (size_t i = 0; i < vector_size(operators); ++i) {
    const fb::Operator* op = operators->Get(static_cast<uoffset_t>(i));
    RT_CHECK(op->name() != nullptr, Error::InvalidProgram, "operator %lu has no name", ul(i));
    KernelFn fn = nullptr;
    for (size_t k = 0; k < kKernelTableSize && fn == nullptr; ++k) {
      if (kKernelTable[k].fn != nullptr && operator_matches(kKernelTable[k].name, *op)) {
        fn = kKernelTable[k].fn;
      }
    }
    RT_CHECK(fn != nullptr, Error::OperatorMissing,
             "%s%s%s: no kernel in this firmware (%lu kernels)", op->name()->c_str(),
             overload_dot(*op), overload_of(*op), ul(kKernelTableSize));
    if (kernels != nullptr) {
      kernels[i] = fn;
    }
  }
  return Error::Ok;
}

Error resolve_backend(const fb::BackendDelegate& delegate, size_t index, const Backend** out) {
  RT_CHECK(delegate.id() != nullptr, Error::InvalidProgram, "delegate %lu has no backend id",
           ul(index));
  const Backend* backend = find_backend(delegate.id()->c_str(), delegate.id()->size());
  RT_CHECK(backend != nullptr, Error::BackendMissing,
           "delegate %lu: no backend '%s' in this firmware (%lu registered)", ul(index),
           delegate.id()->c_str(), ul(num_backends()));
  *out = backend;
  return Error::Ok;
}

Error check_instruction(const fb::Instruction& instruction, size_t pc, size_t count,
                        size_t num_values, size_t num_operators, size_t num_delegates,
                        size_t* num_args) {
  RT_CHECK(instruction.instr_args() != nullptr, Error::InvalidProgram,
           "instruction %lu has no arguments", ul(pc));
  const flatbuffers::Vector<int32_t>* args = nullptr;
  switch (instruction.instr_args_type()) {
    case fb::InstructionArguments::KernelCall: {
      const fb::KernelCall* call = instruction.instr_args_as_KernelCall();
      RT_TRY(check_index("instruction", pc, "operator", call->op_index(), num_operators));
      args = call->args();
      break;
    }
    case fb::InstructionArguments::DelegateCall: {
      const fb::DelegateCall* call = instruction.instr_args_as_DelegateCall();
      RT_TRY(check_index("instruction", pc, "delegate", call->delegate_index(), num_delegates));
      args = call->args();
      break;
    }
    case fb::InstructionArguments::MoveCall: {
      const fb::MoveCall* call = instruction.instr_args_as_MoveCall();
      RT_TRY(check_index("instruction", pc, "move source", call->move_from(), num_values));
      RT_TRY(check_index("instruction", pc, "move target", call->move_to(), num_values));
      break;
    }
    case fb::InstructionArguments::JumpFalseCall: {
      const fb::JumpFalseCall* call = instruction.instr_args_as_JumpFalseCall();
      RT_TRY(check_index("instruction", pc, "condition", call->cond_value_index(), num_values));
      RT_TRY(check_index("instruction", pc, "jump to", call->destination_instruction(), count));
      break;
    }
    case fb::InstructionArguments::FreeCall:
      RT_TRY(check_index("instruction", pc, "freed value",
                         instruction.instr_args_as_FreeCall()->value_index(), num_values));
      break;
    default:
      return fail(Error::InvalidProgram, "instruction %lu has unknown type %d", ul(pc),
                  static_cast<int>(instruction.instr_args_type()));
  }
  // Instructions may share one argument vector: the sum is not bounded by the program's size.
  // Checked first, in the bytes of metadata the arguments take, so a program that shares one
  // long vector many times fails before its arguments are all looked at.
  size_t arg_bytes = 0;
  RT_CHECK(add_size(*num_args, vector_size(args), num_args) &&
               mul_size(*num_args, sizeof(Value*), &arg_bytes),
           Error::InvalidProgram,
           "instruction %lu: arguments pass %lu bytes in all", ul(pc),
           ul(kMaxSize));
  for (size_t k = 0; k < vector_size(args); ++k) {
    RT_TRY(check_index("instruction", pc, "argument value", args->Get(static_cast<uoffset_t>(k)), num_values));
  }
  return Error::Ok;
}

Error count_instructions(const fb::Chain& chain, size_t num_values, size_t num_operators,
                         size_t num_delegates, size_t* num_args) {
  const auto* instructions = chain.instructions();
  size_t count = vector_size(instructions);
  *num_args = 0;
  for (size_t pc = 0; pc < count; ++pc) {
    RT_TRY(check_instruction(*instructions->Get(static_cast<uoffset_t>(pc)), pc, count, num_values,
                             num_operators, num_delegates, num_args));
  }
  return Error::Ok;
}

// Inputs and outputs must be memory-planned, as ExecuTorch's set_input copies only into planned
// inputs: set_input writes into an input's memory and the runner reads the outputs', and a
// constant's memory is the program's own read-only bytes.
Error check_planned(const fb::ExecutionPlan& plan, const flatbuffers::Vector<int32_t>* indices,
                    const char* what) {
  for (size_t i = 0; i < vector_size(indices); ++i) {
    int32_t index = indices->Get(static_cast<uoffset_t>(i));  // in range: checked before
    const fb::EValue* evalue = plan.values()->Get(static_cast<uoffset_t>(index));
    if (evalue->val_type() != fb::KernelTypes::Tensor) {
      continue;  // the runner refuses those with their own reason
    }
    RT_CHECK(evalue->val_as_Tensor()->allocation_info() != nullptr, Error::NotSupported,
             "%s %lu (value %lu) is not memory-planned", what, ul(i),
             ul(static_cast<uint32_t>(index)));
  }
  return Error::Ok;
}

// One metadata block's share of the arena (see kMetadataAlignment).
bool add_block(size_t* total, size_t count, size_t item_size) {
  size_t bytes;
  return mul_size(count, item_size, &bytes) &&
         add_size(*total, align_up(bytes, kMetadataAlignment), total);
}

Error resolve(const Program& program, const char* name, Resolution* r) {
  memset(r, 0, sizeof(*r));
  r->plan = find_plan(program, name);
  RT_CHECK(r->plan != nullptr, Error::InvalidArgument, "the program has no method '%s'",
           name == nullptr ? "" : name);
  const fb::ExecutionPlan& plan = *r->plan;
  size_t num_chains = vector_size(plan.chains());
  RT_CHECK(num_chains <= 1, Error::NotSupported,
           "%lu chains; only one is supported", ul(num_chains));
  r->chain = num_chains == 1 ? plan.chains()->Get(0) : nullptr;

  RT_TRY(count_values(plan, &r->counts));
  size_t num_values = r->counts.values;
  RT_TRY(check_value_indices(plan.inputs(), num_values, "input"));
  RT_TRY(check_value_indices(plan.outputs(), num_values, "output"));

  // Delegates first: on a board without the NPU backend, "no backend" is the news that
  // matters, whatever CPU kernels are missing too.
  r->num_delegates = vector_size(plan.delegates());
  for (size_t d = 0; d < r->num_delegates; ++d) {
    const fb::BackendDelegate* delegate = plan.delegates()->Get(static_cast<uoffset_t>(d));
    const Backend* backend;
    RT_TRY(resolve_backend(*delegate, d, &backend));
    RT_CHECK(add_size(r->num_specs, vector_size(delegate->compile_specs()), &r->num_specs),
             Error::InvalidProgram, "delegate %lu: compile specs pass %lu in all",
             ul(d), ul(kMaxSize));
    RT_CHECK(add_size(r->delegate_state, align_up(backend->state_size, kMetadataAlignment),
                      &r->delegate_state),
             Error::InvalidArgument, "delegate %lu: state bytes pass %lu in all", ul(d),
             ul(kMaxSize));
  }
  r->num_operators = vector_size(plan.operators());
  RT_TRY(resolve_operators(plan, nullptr));
  if (r->chain != nullptr) {
    r->num_steps = vector_size(r->chain->instructions());
    RT_TRY(count_instructions(*r->chain, num_values, r->num_operators, r->num_delegates,
                              &r->num_args));
  }
  RT_TRY(check_planned(plan, plan.inputs(), "input"));
  RT_TRY(check_planned(plan, plan.outputs(), "output"));

  size_t total = 0;
  bool ok = add_block(&total, num_values, sizeof(Value)) &&
            add_block(&total, r->counts.tensors, sizeof(Tensor)) &&
            add_block(&total, r->counts.int_items, sizeof(int64_t)) &&
            add_block(&total, r->counts.double_items, sizeof(double)) &&
            add_block(&total, r->counts.tensor_refs, sizeof(Tensor*)) &&
            add_block(&total, r->num_operators, sizeof(KernelFn)) &&
            add_block(&total, r->num_delegates, sizeof(DelegateSlot)) &&
            add_block(&total, r->num_specs, sizeof(CompileSpec)) &&
            add_block(&total, r->num_steps, sizeof(Step)) &&
            add_block(&total, r->num_args, sizeof(Value*)) &&
            add_block(&total, vector_size(plan.non_const_buffer_sizes()), sizeof(Span)) &&
            add_size(total, r->delegate_state, &total);
  RT_CHECK(ok, Error::InvalidProgram, "metadata size overflow");
  r->metadata_needed = total;
  return Error::Ok;
}

// Allocation that load() sized in advance; failing here is a broken invariant. One function
// for every element type (the typed wrapper is a cast): code size.
__attribute__((noinline)) void* take_bytes(Arena& arena, size_t bytes) {
  return arena.allocate_zeroed(align_up(bytes, kMetadataAlignment), kMetadataAlignment);
}

template <typename T>
T* take(Arena& arena, size_t count) {
  return static_cast<T*>(take_bytes(arena, count * sizeof(T)));
}

Error delegate_payload(const Program& program, const fb::BackendDelegate& delegate,
                       size_t index, ConstBytes* payload) {
  const fb::BackendDelegateDataReference* ref = delegate.processed();
  RT_CHECK(ref != nullptr, Error::InvalidProgram, "delegate %lu has no payload", ul(index));
  if (ref->location() == fb::DataLocation::SEGMENT) {
    Result<ConstBytes> segment = program.segment(ref->index());
    RT_TRY(segment.error());
    *payload = segment.get();
    return Error::Ok;
  }
  RT_CHECK(ref->location() == fb::DataLocation::INLINE, Error::InvalidProgram,
           "delegate %lu: payload location %d", ul(index),
           static_cast<int>(ref->location()));
  const auto* blobs = program_root(program)->backend_delegate_data();
  RT_CHECK(ref->index() < vector_size(blobs), Error::InvalidProgram,
           "delegate %lu: payload %lu out of range (%lu)", ul(index),
           ul(ref->index()), ul(vector_size(blobs)));
  const auto* data = blobs->Get(ref->index())->data();
  *payload = ConstBytes{data == nullptr ? nullptr : data->data(), vector_size(data)};
  return Error::Ok;
}

// A MoveCall copies a whole value. The destination keeps its kind, and a tensor its dtype and
// shape, so that what was checked about it at load (by the runner, by kernels) stays true while
// the method runs; ExecuTorch's emitter only moves between values of one spec. Values change
// kind only through moves, so checking each move once, here, covers every execution.
Error check_move(const Value& from, const Value& to, size_t pc) {
  RT_CHECK(from.tag == to.tag, Error::InvalidProgram,
           "instruction %lu: MoveCall of a %s value into a %s value", ul(pc),
           tag_name(from.tag), tag_name(to.tag));
  if (from.tag != Tag::Tensor) {
    return Error::Ok;
  }
  const Tensor& a = *from.u.t;
  const Tensor& b = *to.u.t;
  bool same = a.dtype == b.dtype && a.dim == b.dim &&
              memcmp(a.sizes, b.sizes, a.dim * sizeof(a.sizes[0])) == 0;
  RT_CHECK(same, Error::InvalidProgram,
           "instruction %lu: MoveCall between tensors of another dtype or shape", ul(pc));
  // The kernels were checked against the destination's dim order (check_kernel_order).
  RT_CHECK(same_order(a, b), Error::InvalidProgram,
           "instruction %lu: MoveCall between tensors of another dim order", ul(pc));
  return Error::Ok;
}

}  // namespace

class MethodLoader {
 public:
  static Result<Method> load(const Program& program, const char* name,
                             const MethodMemory& memory);

 private:
  static Error build_steps(const Resolution& r, Method& m, Arena& arena);
  static Error init_delegates(const Program& program, const Resolution& r, Method& m,
                              Arena& arena);
  static Error prepare_delegate_calls(Method& m);
};

Result<Method> MethodLoader::load(const Program& program, const char* name,
                                  const MethodMemory& memory) {
  RT_CHECK(program.root() != nullptr, Error::InvalidArgument, "the program is not loaded");
  Resolution r;
  RT_TRY(resolve(program, name, &r));
  const fb::ExecutionPlan& plan = *r.plan;

  Arena arena(memory.metadata.data, memory.metadata.data == nullptr ? 0 : memory.metadata.size);
  // The arena's first block may need padding to reach the metadata alignment.
  size_t needed = 0;
  RT_CHECK(add_size(r.metadata_needed, arena.cost(0, kMetadataAlignment), &needed),
           Error::OutOfMemory, "metadata size overflow");
  RT_CHECK(needed <= arena.size(), Error::OutOfMemory,
           "metadata arena too small: the method needs %lu bytes, the arena has %lu",
           ul(needed), ul(arena.size()));

  Method m;
  m.plan_ = &plan;
  m.scratch_ = memory.scratch;
  m.num_values_ = r.counts.values;
  ValueTables tables;
  tables.values = take<Value>(arena, r.counts.values);
  tables.tensors = take<Tensor>(arena, r.counts.tensors);
  tables.ints = take<int64_t>(arena, r.counts.int_items);
  tables.doubles = take<double>(arena, r.counts.double_items);
  tables.tensor_refs = take<Tensor*>(arena, r.counts.tensor_refs);
  m.values_ = tables.values;

  size_t num_buffers = vector_size(plan.non_const_buffer_sizes());
  Span* buffers = take<Span>(arena, num_buffers);
  size_t planned_used = 0;
  size_t planned_capacity = 0;
  size_t num_arenas = memory.planned == nullptr ? 0 : memory.num_planned;
  RT_TRY(lay_out_planned_buffers(plan, memory.planned, num_arenas, buffers, &planned_used,
                                 &planned_capacity));
  RT_TRY(load_values(program, plan, buffers, num_buffers, tables));

  m.num_kernels_ = r.num_operators;
  m.kernels_ = take<KernelFn>(arena, r.num_operators);
  RT_TRY(resolve_operators(plan, m.kernels_));

  RT_TRY(build_steps(r, m, arena));
  RT_TRY(init_delegates(program, r, m, arena));
  RT_TRY(prepare_delegate_calls(m));

  m.num_inputs_ = vector_size(plan.inputs());
  m.input_indices_ = m.num_inputs_ == 0 ? nullptr : plan.inputs()->data();
  m.num_outputs_ = vector_size(plan.outputs());
  m.output_indices_ = m.num_outputs_ == 0 ? nullptr : plan.outputs()->data();
  m.memory_use_ = MemoryUse{arena.used(), arena.size(), planned_used, planned_capacity};
  return m;
}

Error MethodLoader::build_steps(const Resolution& r, Method& m, Arena& arena) {
  m.num_steps_ = r.num_steps;
  m.steps_ = take<Step>(arena, r.num_steps);
  Value** arg_slots = take<Value*>(arena, r.num_args);
  for (size_t pc = 0; pc < r.num_steps; ++pc) {
    const fb::Instruction* instruction = r.chain->instructions()->Get(static_cast<uoffset_t>(pc));
    Step& step = m.steps_[pc];
    const flatbuffers::Vector<int32_t>* args = nullptr;
    switch (instruction->instr_args_type()) {
      case fb::InstructionArguments::KernelCall:
        step.kind = StepKind::Kernel;
        step.a = static_cast<uint32_t>(instruction->instr_args_as_KernelCall()->op_index());
        args = instruction->instr_args_as_KernelCall()->args();
        break;
      case fb::InstructionArguments::DelegateCall:
        step.kind = StepKind::Delegate;
        step.a =
            static_cast<uint32_t>(instruction->instr_args_as_DelegateCall()->delegate_index());
        args = instruction->instr_args_as_DelegateCall()->args();
        break;
      case fb::InstructionArguments::MoveCall:
        step.kind = StepKind::Move;
        step.a = static_cast<uint32_t>(instruction->instr_args_as_MoveCall()->move_from());
        step.b = static_cast<uint32_t>(instruction->instr_args_as_MoveCall()->move_to());
        RT_TRY(check_move(m.values_[step.a], m.values_[step.b], pc));
        break;
      case fb::InstructionArguments::JumpFalseCall:
        step.kind = StepKind::JumpFalse;
        step.a =
            static_cast<uint32_t>(instruction->instr_args_as_JumpFalseCall()->cond_value_index());
        step.b = static_cast<uint32_t>(
            instruction->instr_args_as_JumpFalseCall()->destination_instruction());
        break;
      case fb::InstructionArguments::FreeCall:
        step.kind = StepKind::Free;
        step.a = static_cast<uint32_t>(instruction->instr_args_as_FreeCall()->value_index());
        // As in ExecuTorch, only a tensor can be freed.
        RT_CHECK(m.values_[step.a].tag == Tag::Tensor, Error::InvalidProgram,
                 "instruction %lu: FreeCall of a %s value", ul(pc),
                 tag_name(m.values_[step.a].tag));
        break;
      default:
        return fail(Error::Internal, "instruction %lu changed type", ul(pc));
    }
    size_t nargs = vector_size(args);
    step.args = arg_slots;
    step.nargs = static_cast<uint32_t>(nargs);
    for (size_t k = 0; k < nargs; ++k) {
      arg_slots[k] = &m.values_[args->Get(static_cast<uoffset_t>(k))];  // checked in resolve()
    }
    if (step.kind == StepKind::Kernel) {
      const fb::Operator& op = *r.plan->operators()->Get(static_cast<uoffset_t>(step.a));
      RT_TRY(check_kernel_order(op, step.args, nargs, pc));
    }
    arg_slots += nargs;
  }
  return Error::Ok;
}

Error MethodLoader::init_delegates(const Program& program, const Resolution& r, Method& m,
                                   Arena& arena) {
  const fb::ExecutionPlan& plan = *r.plan;
  m.num_delegates_ = r.num_delegates;
  m.delegates_ = take<DelegateSlot>(arena, r.num_delegates);
  CompileSpec* specs = take<CompileSpec>(arena, r.num_specs);
  for (size_t d = 0; d < r.num_delegates; ++d) {
    const fb::BackendDelegate* delegate = plan.delegates()->Get(static_cast<uoffset_t>(d));
    DelegateSlot& slot = m.delegates_[d];
    RT_TRY(resolve_backend(*delegate, d, &slot.backend));
    ConstBytes payload = {nullptr, 0};
    RT_TRY(delegate_payload(program, *delegate, d, &payload));
    BackendInitContext ctx;
    ctx.payload = payload.data;
    ctx.payload_size = payload.size;
    ctx.delegate_index = d;
    const auto* fb_specs = delegate->compile_specs();
    ctx.specs = specs;
    ctx.num_specs = vector_size(fb_specs);
    for (size_t s = 0; s < ctx.num_specs; ++s) {
      const fb::CompileSpec* spec = fb_specs->Get(static_cast<uoffset_t>(s));
      specs[s].key = spec->key() == nullptr ? "" : spec->key()->c_str();
      specs[s].key_size = spec->key() == nullptr ? 0 : spec->key()->size();
      specs[s].value = spec->value() == nullptr ? nullptr : spec->value()->data();
      specs[s].value_size = vector_size(spec->value());
    }
    specs += ctx.num_specs;
    ctx.state_size = slot.backend->state_size;
    ctx.state = arena.allocate_zeroed(align_up(ctx.state_size, kMetadataAlignment),
                                      kMetadataAlignment);
    slot.state = ctx.state;
    Error err = slot.backend->init(ctx);
    if (err != Error::Ok) {
      add_context("delegate %lu (%s) init", ul(d), slot.backend->id);
      return err;
    }
  }
  return Error::Ok;
}

// Each call site's arguments go to its backend's prepare once, at load (the boundary checks).
Error MethodLoader::prepare_delegate_calls(Method& m) {
  for (size_t pc = 0; pc < m.num_steps_; ++pc) {
    const Step& step = m.steps_[pc];
    if (step.kind != StepKind::Delegate) {
      continue;
    }
    const DelegateSlot& slot = m.delegates_[step.a];
    if (slot.backend->prepare == nullptr) {
      continue;
    }
    BackendPrepareContext ctx = {slot.state, step.args,      step.nargs,
                                 m.values_,  m.scratch_.data, m.scratch_.size};
    clear_error();
    Error err = slot.backend->prepare(ctx);
    if (err != Error::Ok) {
      if (last_error_reason()[0] == '\0') {
        fail(err, "no reason given");
      }
      add_context("delegate %lu (%s) at instruction %lu", ul(step.a), slot.backend->id, ul(pc));
      return err;
    }
  }
  return Error::Ok;
}

Result<Method> Method::load(const Program& program, const char* name,
                            const MethodMemory& memory) {
  return MethodLoader::load(program, name, memory);
}

Result<size_t> Method::metadata_bytes_needed(const Program& program, const char* name) {
  RT_CHECK(program.root() != nullptr, Error::InvalidArgument, "the program is not loaded");
  Resolution r;
  RT_TRY(resolve(program, name, &r));
  return r.metadata_needed + kMetadataAlignment;  // worst-case padding of the arena start
}

const Value* Method::input(size_t i) const {
  return i < num_inputs_ ? &values_[input_indices_[i]] : nullptr;
}

const Value* Method::output(size_t i) const {
  return i < num_outputs_ ? &values_[output_indices_[i]] : nullptr;
}

Error Method::set_input(size_t i, const void* data, size_t nbytes) {
  RT_CHECK(i < num_inputs_, Error::InputMismatch, "no input %lu (%lu inputs)", ul(i),
           ul(num_inputs_));
  const Value& value = values_[input_indices_[i]];
  RT_CHECK(value.tag == Tag::Tensor, Error::NotSupported, "input %lu is %s, not a tensor", ul(i),
           tag_name(value.tag));
  RT_CHECK(!value.u.t->constant, Error::NotSupported, "input %lu is constant data", ul(i));
  RT_CHECK(nbytes == value.u.t->nbytes, Error::InputMismatch,
           "input %lu: %lu bytes given, the tensor has %lu", ul(i), ul(nbytes),
           ul(value.u.t->nbytes));
  if (nbytes > 0) {
    memcpy(value.u.t->data, data, nbytes);
  }
  return Error::Ok;
}

namespace {

// As ExecuTorch's parse_cond_value: a Bool value, or a Bool tensor, which is true when all its
// elements are (an empty one is true).
Error condition_of(const Value& value, size_t pc, bool* out) {
  if (value.tag == Tag::Bool) {
    *out = value.u.b;
    return Error::Ok;
  }
  bool is_tensor = value.tag == Tag::Tensor;
  RT_CHECK(is_tensor && value.u.t->dtype == ScalarType::Bool, Error::InvalidProgram,
           "instruction %lu: condition is %s %s, not Bool", ul(pc),
           is_tensor ? scalar_type_name(value.u.t->dtype) : "a", tag_name(value.tag));
  const Tensor& t = *value.u.t;
  const uint8_t* data = t.data_as<const uint8_t>();
  bool all = true;
  for (size_t i = 0; i < t.numel && all; ++i) {
    all = data[i] != 0;
  }
  *out = all;
  return Error::Ok;
}

}  // namespace

Error Method::execute() {
  RT_CHECK(plan_ != nullptr, Error::InvalidArgument, "the method is not loaded");
  KernelContext ctx{scratch_.data, scratch_.size};
  const auto* plan = static_cast<const fb::ExecutionPlan*>(plan_);
  size_t pc = 0;
  uint32_t steps_run = 0;
  while (pc < num_steps_) {
    RT_CHECK(++steps_run <= max_steps_, Error::NotSupported,
             "stopped after %lu instructions (endless JumpFalse loop?)",
             ul(max_steps_));
    if (observer_ != nullptr) {
      observer_(observer_context_, pc);
    }
    const Step& step = steps_[pc];
    Error err = Error::Ok;
    switch (step.kind) {
      case StepKind::Kernel:
        clear_error();
        err = kernels_[step.a](ctx, step.args, step.nargs);
        if (err != Error::Ok) {
          const fb::Operator* op = plan->operators()->Get(step.a);
          if (last_error_reason()[0] == '\0') {
            fail(err, "no reason given");
          }
          add_context("instruction %lu (%s%s%s)", ul(pc), op->name()->c_str(), overload_dot(*op),
                      overload_of(*op));
          return err;
        }
        ++pc;
        break;
      case StepKind::Delegate: {
        const DelegateSlot& slot = delegates_[step.a];
        clear_error();
        err = slot.backend->execute(slot.state, ctx, step.args, step.nargs);
        if (err != Error::Ok) {
          if (last_error_reason()[0] == '\0') {
            fail(err, "no reason given");
          }
          add_context("instruction %lu (delegate %lu, %s)", ul(pc), ul(step.a), slot.backend->id);
          return err;
        }
        ++pc;
        break;
      }
      case StepKind::Move:
        values_[step.b] = values_[step.a];
        ++pc;
        break;
      case StepKind::JumpFalse: {
        bool condition = false;
        RT_TRY(condition_of(values_[step.a], pc, &condition));
        pc = condition ? pc + 1 : step.b;
        break;
      }
      case StepKind::Free:
        ++pc;  // planned memory: nothing to free
        break;
    }
  }
  return Error::Ok;
}

}  // namespace rt
