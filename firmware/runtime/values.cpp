// Building the Value and Tensor tables from the program's EValues.
//
// Two passes: scalars and tensors first, then lists, whose items are indices
// of other values (an IntList's items are Int values, as in ExecuTorch's
// method.cpp, and are unboxed here once, at load).
#include <string.h>

#include "method_internal.h"

namespace rt {
namespace {

using flatbuffers::uoffset_t;

Error tensor_shape(const fb::Tensor& t, Tensor* out) {
  ScalarType dtype = static_cast<ScalarType>(t.scalar_type());
  size_t esize = element_size(dtype);
  RT_CHECK(esize != 0, Error::NotSupported, "dtype %d not supported",
           static_cast<int>(t.scalar_type()));
  RT_CHECK(t.shape_dynamism() == fb::TensorShapeDynamism::STATIC, Error::NotSupported,
           "dynamic shapes not supported");
  RT_CHECK(t.storage_offset() == 0, Error::NotSupported, "storage offset not supported");
  const auto* extra = t.extra_tensor_info();
  RT_CHECK(extra == nullptr || extra->location() != fb::TensorDataLocation::EXTERNAL,
           Error::NotSupported, "external data (.ptd) not supported");
  size_t dim = vector_size(t.sizes());
  RT_CHECK(dim <= static_cast<size_t>(kMaxDims), Error::NotSupported,
           "%lu dimensions, at most %d supported", ul(dim), kMaxDims);
  uint64_t numel = 1;
  for (size_t d = 0; d < dim; ++d) {
    int32_t size = t.sizes()->Get(static_cast<uoffset_t>(d));
    RT_CHECK(size >= 0, Error::InvalidProgram, "dimension %lu has size %d", ul(d),
             static_cast<int>(size));
    numel *= static_cast<uint64_t>(size);  // each factor < 2^31 and numel <= 2^31: no overflow
    RT_CHECK(numel <= kMaxSize, Error::NotSupported, "over %lu elements", ul(kMaxSize));
    out->sizes[d] = size;
  }
  size_t order_size = vector_size(t.dim_order());
  RT_CHECK(order_size == 0 || order_size == dim, Error::InvalidProgram,
           "dim order has %lu entries for %lu dimensions", ul(order_size), ul(dim));
  bool seen[kMaxDims] = {};
  for (size_t d = 0; d < dim; ++d) {
    size_t axis = order_size == 0 ? d : t.dim_order()->Get(static_cast<uoffset_t>(d));
    RT_CHECK(axis < dim && !seen[axis], Error::InvalidProgram,
             "dim order is not a permutation of the %lu dimensions", ul(dim));
    seen[axis] = true;
    out->dim_order[d] = static_cast<uint8_t>(axis);
  }
  // numel * esize wraps a 32-bit size_t already at 2^30 Float elements: a tensor whose byte
  // count wrapped to 0 would pass every bounds check and let a kernel write gigabytes.
  size_t nbytes = 0;
  RT_CHECK(mul_size(static_cast<size_t>(numel), esize, &nbytes), Error::NotSupported,
           "%s elements of %lu bytes: over the %lu-byte limit of a tensor",
           uint_text(numel).text, ul(esize), ul(kMaxSize));
  out->dtype = dtype;
  out->dim = static_cast<uint8_t>(dim);
  out->numel = static_cast<size_t>(numel);
  out->nbytes = nbytes;
  return Error::Ok;
}

// The program's bytes for constant `buffer_index`: read-only, like the whole program.
Error constant_data(const Program& program, uint32_t buffer_index, size_t nbytes,
                    const uint8_t** data) {
  const fb::Program& root = *program_root(program);
  const fb::SubsegmentOffsets* constants = root.constant_segment();
  size_t num_offsets = constants == nullptr ? 0 : vector_size(constants->offsets());
  if (num_offsets > 0) {
    RT_CHECK(buffer_index < num_offsets, Error::InvalidProgram,
             "constant %lu out of range (%lu)", ul(buffer_index), ul(num_offsets));
    Result<ConstBytes> segment = program.segment(constants->segment_index());
    RT_TRY(segment.error());
    uint64_t offset = constants->offsets()->Get(buffer_index);  // <= segment size (load check)
    RT_CHECK(nbytes <= segment.get().size - offset, Error::InvalidProgram,
             "constant %lu: %lu bytes at %s overrun its %lu-byte segment", ul(buffer_index),
             ul(nbytes), uint_text(offset).text, ul(segment.get().size));
    *data = segment.get().data + offset;
    return Error::Ok;
  }
  // Legacy programs keep constants inline in constant_buffer.
  const auto* buffers = root.constant_buffer();
  RT_CHECK(buffer_index < vector_size(buffers), Error::InvalidProgram,
           "constant buffer %lu out of range (%lu)", ul(buffer_index), ul(vector_size(buffers)));
  const auto* storage = buffers->Get(buffer_index)->storage();
  RT_CHECK(nbytes <= vector_size(storage), Error::InvalidProgram,
           "constant buffer %lu holds %lu bytes, the tensor needs %lu", ul(buffer_index),
           ul(vector_size(storage)), ul(nbytes));
  *data = nbytes == 0 ? nullptr : storage->data();
  return Error::Ok;
}

Error tensor_data(const Program& program, const fb::Tensor& t, const Span* buffers,
                  size_t num_buffers, Tensor* out) {
  const fb::AllocationDetails* allocation = t.allocation_info();
  uint32_t buffer_index = t.data_buffer_idx();
  out->data = nullptr;
  out->constant = false;
  if (allocation != nullptr) {
    RT_CHECK(buffer_index == 0, Error::NotSupported, "mutable tensor with initial data");
    uint32_t memory_id = allocation->memory_id();
    RT_CHECK(memory_id >= 1 && memory_id < num_buffers, Error::InvalidProgram,
             "memory id %lu out of range (%lu buffers)", ul(memory_id),
             ul(num_buffers == 0 ? 0 : num_buffers - 1));
    uint64_t offset = (static_cast<uint64_t>(allocation->memory_offset_high()) << 32) |
                      allocation->memory_offset_low();
    const Span& buffer = buffers[memory_id];
    RT_CHECK(offset <= buffer.size && out->nbytes <= buffer.size - offset, Error::InvalidProgram,
             "%lu bytes at %s overrun planned buffer %lu (%lu bytes)", ul(out->nbytes),
             uint_text(offset).text, ul(memory_id), ul(buffer.size));
    out->data = buffer.data + offset;
  } else if (buffer_index > 0) {
    const uint8_t* constant = nullptr;
    RT_TRY(constant_data(program, buffer_index, out->nbytes, &constant));
    // Kernels get constants as read-only arguments; the runtime never writes through this
    // pointer: set_input refuses a constant tensor (one a MoveCall put in an input's place).
    out->data = const_cast<uint8_t*>(constant);
    out->constant = true;
  } else {
    RT_CHECK(out->nbytes == 0, Error::NotSupported,
             "no planned memory and no constant data (plan inputs/outputs at export)");
  }
  size_t align = element_size(out->dtype);
  RT_CHECK(reinterpret_cast<uintptr_t>(out->data) % align == 0, Error::InvalidProgram,
           "data not aligned to its %lu-byte elements", ul(align));
  return Error::Ok;
}

const fb::EValue* evalue_at(const fb::ExecutionPlan& plan, size_t index) {
  return plan.values()->Get(static_cast<uoffset_t>(index));
}

// The value an item of a list refers to, checked for range and tag.
Error list_item(const ValueTables& tables, size_t num_values, int64_t item,
                Tag want, bool allow_none, const Value** out) {
  RT_CHECK(item >= 0 && static_cast<uint64_t>(item) < num_values, Error::InvalidProgram,
           "list item: value %s out of range (%lu)", int_text(item).text, ul(num_values));
  const Value* value = &tables.values[item];
  RT_CHECK(value->tag == want || (allow_none && value->tag == Tag::None), Error::InvalidProgram,
           "list item: value %s is %s, not %s", int_text(item).text, tag_name(value->tag),
           tag_name(want));
  *out = value;
  return Error::Ok;
}

}  // namespace

Error count_values(const fb::ExecutionPlan& plan, ValueCounts* counts) {
  memset(counts, 0, sizeof(*counts));
  counts->values = vector_size(plan.values());
  for (size_t i = 0; i < counts->values; ++i) {
    const fb::EValue* evalue = evalue_at(plan, i);
    // The verifier accepts a union whose type is set but whose table is absent.
    RT_CHECK(evalue->val() != nullptr || evalue->val_type() == fb::KernelTypes::Null,
             Error::InvalidProgram, "value %lu has no content", ul(i));
    // Many values may share one list table: the sums are not bounded by the program's size.
    size_t* count = nullptr;
    size_t items = 0;
    switch (evalue->val_type()) {
      case fb::KernelTypes::Tensor:
        count = &counts->tensors;
        items = 1;
        break;
      case fb::KernelTypes::IntList:
        count = &counts->int_items;
        items = vector_size(evalue->val_as_IntList()->items());
        break;
      case fb::KernelTypes::DoubleList:
        count = &counts->double_items;
        items = vector_size(evalue->val_as_DoubleList()->items());
        break;
      case fb::KernelTypes::TensorList:
        count = &counts->tensor_refs;
        items = vector_size(evalue->val_as_TensorList()->items());
        break;
      case fb::KernelTypes::OptionalTensorList:
        count = &counts->tensor_refs;
        items = vector_size(evalue->val_as_OptionalTensorList()->items());
        break;
      default:
        break;
    }
    RT_CHECK(count == nullptr || add_size(*count, items, count), Error::InvalidProgram,
             "value %lu: list items pass %lu in all",
             ul(i), ul(kMaxSize));
  }
  return Error::Ok;
}

namespace {

// Pass 1: everything but lists.
Error load_plain_value(const Program& program, const fb::EValue& evalue, const Span* buffers,
                       size_t num_buffers, Tensor* next_tensor, Value& value) {
  value.tag = Tag::None;
  switch (evalue.val_type()) {
    case fb::KernelTypes::Null:
      break;
    case fb::KernelTypes::Int:
      value.tag = Tag::Int;
      value.u.i = evalue.val_as_Int()->int_val();
      break;
    case fb::KernelTypes::Bool:
      value.tag = Tag::Bool;
      value.u.b = evalue.val_as_Bool()->bool_val();
      break;
    case fb::KernelTypes::Double:
      value.tag = Tag::Double;
      value.u.d = evalue.val_as_Double()->double_val();
      break;
    case fb::KernelTypes::String: {
      const flatbuffers::String* s = evalue.val_as_String()->string_val();
      value.tag = Tag::String;
      value.u.s = ArrayRef<char>{s == nullptr ? "" : s->c_str(), s == nullptr ? 0 : s->size()};
      break;
    }
    case fb::KernelTypes::Tensor: {
      const fb::Tensor& t = *evalue.val_as_Tensor();
      RT_TRY(tensor_shape(t, next_tensor));
      RT_TRY(tensor_data(program, t, buffers, num_buffers, next_tensor));
      value.tag = Tag::Tensor;
      value.u.t = next_tensor;
      break;
    }
    case fb::KernelTypes::IntList:
    case fb::KernelTypes::DoubleList:
    case fb::KernelTypes::BoolList:
    case fb::KernelTypes::TensorList:
    case fb::KernelTypes::OptionalTensorList:
      break;  // pass 2
    default:
      return fail(Error::InvalidProgram, "unknown value type %d",
                  static_cast<int>(evalue.val_type()));
  }
  return Error::Ok;
}

struct ListCursor {
  size_t ints;
  size_t doubles;
  size_t refs;
};

// Pass 2: lists, whose items refer to values loaded in pass 1.
Error load_list_value(const fb::EValue& evalue, const ValueTables& tables, size_t num_values,
                      ListCursor& cursor, Value& value) {
  switch (evalue.val_type()) {
    case fb::KernelTypes::IntList: {
      const auto* items = evalue.val_as_IntList()->items();
      size_t n = vector_size(items);
      int64_t* ints = tables.ints + cursor.ints;
      for (size_t k = 0; k < n; ++k) {
        const Value* item;
        RT_TRY(list_item(tables, num_values, items->Get(static_cast<uoffset_t>(k)), Tag::Int,
                         false, &item));
        ints[k] = item->u.i;
      }
      cursor.ints += n;
      value.tag = Tag::IntList;
      value.u.int_list = ArrayRef<int64_t>{ints, n};
      break;
    }
    case fb::KernelTypes::DoubleList: {
      const auto* items = evalue.val_as_DoubleList()->items();
      size_t n = vector_size(items);
      double* doubles = tables.doubles + cursor.doubles;
      for (size_t k = 0; k < n; ++k) {
        doubles[k] = items->Get(static_cast<uoffset_t>(k));
      }
      cursor.doubles += n;
      value.tag = Tag::DoubleList;
      value.u.double_list = ArrayRef<double>{doubles, n};
      break;
    }
    case fb::KernelTypes::BoolList: {
      const auto* items = evalue.val_as_BoolList()->items();
      value.tag = Tag::BoolList;
      value.u.bool_list =
          ArrayRef<uint8_t>{items == nullptr ? nullptr : items->data(), vector_size(items)};
      break;
    }
    case fb::KernelTypes::TensorList:
    case fb::KernelTypes::OptionalTensorList: {
      bool optional = evalue.val_type() == fb::KernelTypes::OptionalTensorList;
      const auto* items = optional ? evalue.val_as_OptionalTensorList()->items()
                                   : evalue.val_as_TensorList()->items();
      size_t n = vector_size(items);
      Tensor** refs = tables.tensor_refs + cursor.refs;
      for (size_t k = 0; k < n; ++k) {
        int32_t item_index = items->Get(static_cast<uoffset_t>(k));
        if (optional && item_index == -1) {
          refs[k] = nullptr;
          continue;
        }
        const Value* item;
        RT_TRY(list_item(tables, num_values, item_index, Tag::Tensor, optional, &item));
        refs[k] = item->tag == Tag::Tensor ? item->u.t : nullptr;
      }
      cursor.refs += n;
      value.tag = optional ? Tag::OptionalTensorList : Tag::TensorList;
      value.u.tensor_list = ArrayRef<Tensor*>{refs, n};
      break;
    }
    default:
      break;
  }
  return Error::Ok;
}

}  // namespace

Error load_values(const Program& program, const fb::ExecutionPlan& plan, const Span* buffers,
                  size_t num_buffers, const ValueTables& tables) {
  size_t num_values = vector_size(plan.values());
  size_t next_tensor = 0;
  size_t i = 0;
  Error err = Error::Ok;
  for (; i < num_values && err == Error::Ok; ++i) {
    const fb::EValue& evalue = *evalue_at(plan, i);
    err = load_plain_value(program, evalue, buffers, num_buffers, tables.tensors + next_tensor,
                           tables.values[i]);
    next_tensor += evalue.val_type() == fb::KernelTypes::Tensor ? 1 : 0;
  }
  ListCursor cursor = {0, 0, 0};
  if (err == Error::Ok) {
    for (i = 0; i < num_values && err == Error::Ok; ++i) {
      err = load_list_value(*evalue_at(plan, i), tables, num_values, cursor, tables.values[i]);
    }
  }
  if (err != Error::Ok) {
    add_context("value %lu", ul(i - 1));
  }
  return err;
}

}  // namespace rt
