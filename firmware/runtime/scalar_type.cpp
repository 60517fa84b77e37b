// Element sizes and names of the dtypes the runtime supports.
#include "rt/scalar_type.h"

#include "rt/value.h"

namespace rt {

// Both from the generated table (contract.h): one row per type the firmware knows.
size_t element_size(ScalarType t) {
  for (const contract::ScalarTypeInfo& info : contract::kScalarTypes) {
    if (info.type == t) return info.size;
  }
  return 0;
}

const char* scalar_type_name(ScalarType t) {
  for (const contract::ScalarTypeInfo& info : contract::kScalarTypes) {
    if (info.type == t) return info.name;
  }
  return "Unknown";
}

const char* tag_name(Tag t) {
  switch (t) {
    case Tag::None: return "None";
    case Tag::Int: return "Int";
    case Tag::Double: return "Double";
    case Tag::Bool: return "Bool";
    case Tag::Tensor: return "Tensor";
    case Tag::String: return "String";
    case Tag::IntList: return "IntList";
    case Tag::DoubleList: return "DoubleList";
    case Tag::BoolList: return "BoolList";
    case Tag::TensorList: return "TensorList";
    case Tag::OptionalTensorList: return "OptionalTensorList";
  }
  return "Unknown";
}

}  // namespace rt
