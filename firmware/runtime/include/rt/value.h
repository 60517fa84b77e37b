// The program's values (ExecuTorch EValues) as kernels receive them.
//
// Lists point into memory the runtime owns for the method's lifetime (the
// method arena or the program buffer). Int lists are unboxed at load time.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/tensor.h"

namespace rt {

enum class Tag : uint8_t {
  None = 0,
  Int,
  Double,
  Bool,
  Tensor,
  String,
  IntList,
  DoubleList,
  BoolList,
  TensorList,
  OptionalTensorList,
};

const char* tag_name(Tag t);

template <typename T>
struct ArrayRef {
  const T* data;
  size_t size;
  const T& operator[](size_t i) const { return data[i]; }
};

struct Value {
  Tag tag;
  union {
    int64_t i;
    double d;
    bool b;
    Tensor* t;
    ArrayRef<char> s;
    ArrayRef<int64_t> int_list;
    ArrayRef<double> double_list;
    ArrayRef<uint8_t> bool_list;
    ArrayRef<Tensor*> tensor_list;  // OptionalTensorList: entries may be null
  } u;

  bool is_none() const { return tag == Tag::None; }
  bool is_int() const { return tag == Tag::Int; }
  bool is_double() const { return tag == Tag::Double; }
  bool is_bool() const { return tag == Tag::Bool; }
  bool is_tensor() const { return tag == Tag::Tensor; }
  bool is_int_list() const { return tag == Tag::IntList; }
  bool is_tensor_list() const { return tag == Tag::TensorList; }
  // A Scalar argument (aten "Scalar") may arrive as Int, Double or Bool.
  bool is_scalar() const { return tag == Tag::Int || tag == Tag::Double || tag == Tag::Bool; }
  double scalar_as_double() const {
    return tag == Tag::Double ? u.d : tag == Tag::Int ? static_cast<double>(u.i) : (u.b ? 1.0 : 0.0);
  }
};

}  // namespace rt
