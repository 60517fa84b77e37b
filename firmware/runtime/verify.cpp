// Verifying exactly the parts of a program the runtime reads.
//
// flatc's generated Program::Verify checks every field of every table,
// including the many the runtime never reads (stack traces, container
// metadata, named data, device placement), through one template instance per
// table type: about 5 KiB of code. This verifier checks, with the same
// flatbuffers::Verifier primitives (bounds, alignment, depth, table count),
// only the tables and fields that the runtime's accessors read, with one
// generic routine per shape, in a third of the code. A field read anywhere in
// the runtime must be checked here first (host tests cross-check against the
// generated verifier; the fuzz target runs both under ASan).
#include "verify.h"

#include "schema.h"

namespace rt {
namespace {

using flatbuffers::String;
using flatbuffers::Table;
using flatbuffers::uoffset_t;
using flatbuffers::Verifier;
using flatbuffers::voffset_t;

using TableCheck = bool (*)(Verifier& v, const Table& t);

// Vtable slots compared across generated enums (each table has its own enum type).
constexpr int slot(int vtable_offset) { return vtable_offset; }

template <typename T>
bool scalar(Verifier& v, const Table& t, voffset_t field) {
  return t.VerifyField<T>(v, field, sizeof(T));
}

// Whether 8-byte vector elements must be 8-byte aligned (flatbuffers checks only 4).
bool g_check_element_alignment = true;

// A vector of scalars of `elem_size` bytes, elements aligned to their size.
bool scalars(Verifier& v, const Table& t, voffset_t field, size_t elem_size) {
  if (!t.VerifyOffset(v, field)) {
    return false;
  }
  const uint8_t* vec = t.GetPointer<const uint8_t*>(field);
  uintptr_t elements = reinterpret_cast<uintptr_t>(vec) + sizeof(uoffset_t);
  return vec == nullptr ||
         (v.VerifyVectorOrString(vec, elem_size) &&
          v.Check(!g_check_element_alignment || elements % elem_size == 0));
}

bool string(Verifier& v, const Table& t, voffset_t field) {
  return t.VerifyOffset(v, field) && v.VerifyString(t.GetPointer<const String*>(field));
}

bool table_at(Verifier& v, const Table* t, TableCheck check) {
  return t == nullptr ||
         (t->VerifyTableStart(v) && check(v, *t) && v.EndTable());
}

bool table(Verifier& v, const Table& t, voffset_t field, TableCheck check) {
  return t.VerifyOffset(v, field) && table_at(v, t.GetPointer<const Table*>(field), check);
}

bool tables(Verifier& v, const Table& t, voffset_t field, TableCheck check) {
  if (!t.VerifyOffset(v, field)) {
    return false;
  }
  const auto* vec = t.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<Table>>*>(field);
  if (vec == nullptr) {
    return true;
  }
  if (!v.VerifyVector(vec)) {
    return false;
  }
  for (uoffset_t i = 0; i < vec->size(); ++i) {
    if (!table_at(v, vec->Get(i), check)) {
      return false;
    }
  }
  return true;
}

// A union: its type byte, and the table its type says, checked with `checks[type]`.
bool union_of(Verifier& v, const Table& t, voffset_t type_field, voffset_t value_field,
              const TableCheck* checks, size_t num_checks) {
  if (!scalar<uint8_t>(v, t, type_field) || !t.VerifyOffset(v, value_field)) {
    return false;
  }
  uint8_t type = t.GetField<uint8_t>(type_field, 0);
  // Unknown types are refused by the loader, which never reads their table.
  return type >= num_checks || checks[type] == nullptr ||
         table_at(v, t.GetPointer<const Table*>(value_field), checks[type]);
}

bool nothing(Verifier&, const Table&) { return true; }

// ---- values ---------------------------------------------------------------------------------

bool int_value(Verifier& v, const Table& t) { return scalar<int64_t>(v, t, fb::Int::VT_INT_VAL); }
bool bool_value(Verifier& v, const Table& t) {
  return scalar<uint8_t>(v, t, fb::Bool::VT_BOOL_VAL);
}
bool double_value(Verifier& v, const Table& t) {
  return scalar<double>(v, t, fb::Double::VT_DOUBLE_VAL);
}
bool string_value(Verifier& v, const Table& t) {
  return string(v, t, fb::String::VT_STRING_VAL);
}
// IntList, DoubleList, BoolList, TensorList, OptionalTensorList: one `items` vector each.
static_assert(slot(fb::IntList::VT_ITEMS) == slot(fb::DoubleList::VT_ITEMS) &&
                  slot(fb::IntList::VT_ITEMS) == slot(fb::BoolList::VT_ITEMS) &&
                  slot(fb::IntList::VT_ITEMS) == slot(fb::TensorList::VT_ITEMS) &&
                  slot(fb::IntList::VT_ITEMS) == slot(fb::OptionalTensorList::VT_ITEMS),
              "lists share their layout");
bool list_of_8_bytes(Verifier& v, const Table& t) {
  return scalars(v, t, fb::IntList::VT_ITEMS, 8);
}
bool list_of_4_bytes(Verifier& v, const Table& t) {
  return scalars(v, t, fb::TensorList::VT_ITEMS, 4);
}
bool list_of_bytes(Verifier& v, const Table& t) {
  return scalars(v, t, fb::BoolList::VT_ITEMS, 1);
}

bool allocation(Verifier& v, const Table& t) {
  return scalar<uint32_t>(v, t, fb::AllocationDetails::VT_MEMORY_ID) &&
         scalar<uint32_t>(v, t, fb::AllocationDetails::VT_MEMORY_OFFSET_LOW) &&
         scalar<uint32_t>(v, t, fb::AllocationDetails::VT_MEMORY_OFFSET_HIGH);
}

bool extra_tensor_info(Verifier& v, const Table& t) {
  return scalar<int8_t>(v, t, fb::ExtraTensorInfo::VT_LOCATION);
}

bool tensor(Verifier& v, const Table& t) {
  return scalar<int8_t>(v, t, fb::Tensor::VT_SCALAR_TYPE) &&
         scalar<int32_t>(v, t, fb::Tensor::VT_STORAGE_OFFSET) &&
         scalars(v, t, fb::Tensor::VT_SIZES, 4) && scalars(v, t, fb::Tensor::VT_DIM_ORDER, 1) &&
         scalar<uint32_t>(v, t, fb::Tensor::VT_DATA_BUFFER_IDX) &&
         table(v, t, fb::Tensor::VT_ALLOCATION_INFO, allocation) &&
         scalar<int8_t>(v, t, fb::Tensor::VT_SHAPE_DYNAMISM) &&
         table(v, t, fb::Tensor::VT_EXTRA_TENSOR_INFO, extra_tensor_info);
}

// Indexed by fb::KernelTypes.
const TableCheck kValueChecks[] = {
    nullptr,          // NONE
    nothing,          // Null
    int_value,        // Int
    bool_value,       // Bool
    double_value,     // Double
    tensor,           // Tensor
    string_value,     // String
    list_of_8_bytes,  // IntList
    list_of_8_bytes,  // DoubleList
    list_of_bytes,    // BoolList
    list_of_4_bytes,  // TensorList
    list_of_4_bytes,  // OptionalTensorList
};
static_assert(sizeof(kValueChecks) / sizeof(kValueChecks[0]) ==
                  static_cast<size_t>(fb::KernelTypes::MAX) + 1,
              "one check per value type");

bool evalue(Verifier& v, const Table& t) {
  return union_of(v, t, fb::EValue::VT_VAL_TYPE, fb::EValue::VT_VAL, kValueChecks,
                  sizeof(kValueChecks) / sizeof(kValueChecks[0]));
}

// ---- instructions ---------------------------------------------------------------------------

// KernelCall and DelegateCall: an index and an `args` vector, at the same vtable slots.
static_assert(slot(fb::KernelCall::VT_OP_INDEX) == slot(fb::DelegateCall::VT_DELEGATE_INDEX) &&
                  slot(fb::KernelCall::VT_ARGS) == slot(fb::DelegateCall::VT_ARGS),
              "calls share their layout");
bool call(Verifier& v, const Table& t) {
  return scalar<int32_t>(v, t, fb::KernelCall::VT_OP_INDEX) &&
         scalars(v, t, fb::KernelCall::VT_ARGS, 4);
}
// MoveCall and JumpFalseCall: two int32 fields; FreeCall: one.
static_assert(slot(fb::MoveCall::VT_MOVE_FROM) == slot(fb::JumpFalseCall::VT_COND_VALUE_INDEX) &&
                  slot(fb::MoveCall::VT_MOVE_TO) ==
                      slot(fb::JumpFalseCall::VT_DESTINATION_INSTRUCTION) &&
                  slot(fb::MoveCall::VT_MOVE_FROM) == slot(fb::FreeCall::VT_VALUE_INDEX),
              "small instructions share their layout");
bool two_ints(Verifier& v, const Table& t) {
  return scalar<int32_t>(v, t, fb::MoveCall::VT_MOVE_FROM) &&
         scalar<int32_t>(v, t, fb::MoveCall::VT_MOVE_TO);
}

// Indexed by fb::InstructionArguments.
const TableCheck kInstructionChecks[] = {nullptr, call, call, two_ints, two_ints, two_ints};
static_assert(sizeof(kInstructionChecks) / sizeof(kInstructionChecks[0]) ==
                  static_cast<size_t>(fb::InstructionArguments::MAX) + 1,
              "one check per instruction type");

bool instruction(Verifier& v, const Table& t) {
  return union_of(v, t, fb::Instruction::VT_INSTR_ARGS_TYPE, fb::Instruction::VT_INSTR_ARGS,
                  kInstructionChecks, sizeof(kInstructionChecks) / sizeof(kInstructionChecks[0]));
}

bool chain(Verifier& v, const Table& t) {
  return tables(v, t, fb::Chain::VT_INSTRUCTIONS, instruction);
}

bool op(Verifier& v, const Table& t) {
  return string(v, t, fb::Operator::VT_NAME) && string(v, t, fb::Operator::VT_OVERLOAD);
}

bool data_reference(Verifier& v, const Table& t) {
  return scalar<int8_t>(v, t, fb::BackendDelegateDataReference::VT_LOCATION) &&
         scalar<uint32_t>(v, t, fb::BackendDelegateDataReference::VT_INDEX);
}

bool compile_spec(Verifier& v, const Table& t) {
  return string(v, t, fb::CompileSpec::VT_KEY) && scalars(v, t, fb::CompileSpec::VT_VALUE, 1);
}

bool delegate(Verifier& v, const Table& t) {
  return string(v, t, fb::BackendDelegate::VT_ID) &&
         table(v, t, fb::BackendDelegate::VT_PROCESSED, data_reference) &&
         tables(v, t, fb::BackendDelegate::VT_COMPILE_SPECS, compile_spec);
}

bool plan(Verifier& v, const Table& t) {
  return string(v, t, fb::ExecutionPlan::VT_NAME) &&
         tables(v, t, fb::ExecutionPlan::VT_VALUES, evalue) &&
         scalars(v, t, fb::ExecutionPlan::VT_INPUTS, 4) &&
         scalars(v, t, fb::ExecutionPlan::VT_OUTPUTS, 4) &&
         tables(v, t, fb::ExecutionPlan::VT_CHAINS, chain) &&
         tables(v, t, fb::ExecutionPlan::VT_OPERATORS, op) &&
         tables(v, t, fb::ExecutionPlan::VT_DELEGATES, delegate) &&
         scalars(v, t, fb::ExecutionPlan::VT_NON_CONST_BUFFER_SIZES, 8);
}

// ---- program --------------------------------------------------------------------------------

// Buffer.storage and BackendDelegateInlineData.data: one byte vector each.
static_assert(slot(fb::Buffer::VT_STORAGE) == slot(fb::BackendDelegateInlineData::VT_DATA),
              "byte blobs share their layout");
bool byte_blob(Verifier& v, const Table& t) { return scalars(v, t, fb::Buffer::VT_STORAGE, 1); }

bool segment(Verifier& v, const Table& t) {
  return scalar<uint64_t>(v, t, fb::DataSegment::VT_OFFSET) &&
         scalar<uint64_t>(v, t, fb::DataSegment::VT_SIZE);
}

bool subsegment_offsets(Verifier& v, const Table& t) {
  return scalar<uint32_t>(v, t, fb::SubsegmentOffsets::VT_SEGMENT_INDEX) &&
         scalars(v, t, fb::SubsegmentOffsets::VT_OFFSETS, 8);
}

bool program(Verifier& v, const Table& t) {
  return tables(v, t, fb::Program::VT_EXECUTION_PLAN, plan) &&
         tables(v, t, fb::Program::VT_CONSTANT_BUFFER, byte_blob) &&
         tables(v, t, fb::Program::VT_BACKEND_DELEGATE_DATA, byte_blob) &&
         tables(v, t, fb::Program::VT_SEGMENTS, segment) &&
         table(v, t, fb::Program::VT_CONSTANT_SEGMENT, subsegment_offsets);
}

// The root, in the form Verifier::VerifyBufferFromStart expects.
struct ProgramRoot {
  bool Verify(Verifier& v) const {
    return table_at(v, reinterpret_cast<const Table*>(this), program);
  }
};

}  // namespace

bool verify_program_buffer(const uint8_t* data, size_t size, uint32_t max_depth,
                           uint32_t max_tables, bool check_element_alignment) {
  g_check_element_alignment = check_element_alignment;
  Verifier verifier(data, size, max_depth, max_tables);
  return verifier.VerifyBufferFromStart<ProgramRoot>(fb::ProgramIdentifier(), 0);
}

}  // namespace rt
