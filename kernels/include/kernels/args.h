// Reading a KernelCall's arguments: one checked accessor per schema type.
//
// Every accessor checks the value's tag (and, for tensors, that the tensor is
// self-consistent) and fails with a reason naming the operator and the
// argument, so a kernel body only states what it needs:
//   kernels::Args a("aten::bmm.out", args, nargs);
//   RT_TRY(a.count(4));
//   RT_TRY(a.tensor(0, "self", self));
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "rt/error.h"
#include "rt/kernel.h"
#include "rt/scalar_type.h"
#include "rt/tensor.h"
#include "rt/value.h"

namespace kernels {

// An aten `Scalar` as it arrived (Int, Double or Bool).
struct Scalar {
  rt::Tag tag;
  int64_t i;
  double d;
  bool b;

  bool is_floating() const { return tag == rt::Tag::Double; }
  bool is_bool() const { return tag == rt::Tag::Bool; }
  double to_double() const {
    return tag == rt::Tag::Double ? d : tag == rt::Tag::Int ? static_cast<double>(i) : (b ? 1.0 : 0.0);
  }
  int64_t to_int() const {
    return tag == rt::Tag::Int ? i : tag == rt::Tag::Bool ? (b ? 1 : 0) : static_cast<int64_t>(d);
  }
};

// An optional argument: `present` is false when the value was None.
template <typename T>
struct Optional {
  bool present;
  T value;
};

class Args {
 public:
  Args(const char* op, rt::Value* const* args, size_t nargs) : op_(op), args_(args), nargs_(nargs) {}

  const char* op() const { return op_; }

  // The call must carry exactly `n` values (schema arguments + returns).
  rt::Error count(size_t n) const {
    RT_CHECK(args_ != nullptr || nargs_ == 0, rt::Error::InvalidArgument, "%s: null argument array", op_);
    RT_CHECK(nargs_ == n, rt::Error::InvalidArgument, "%s: expected %u arguments, got %u", op_,
             static_cast<unsigned>(n), static_cast<unsigned>(nargs_));
    for (size_t i = 0; i < n; ++i) {
      RT_CHECK(args_[i] != nullptr, rt::Error::InvalidArgument, "%s: argument %u is null", op_,
               static_cast<unsigned>(i));
    }
    return rt::Error::Ok;
  }

  // A call that may or may not carry its return value (ops returning `()`
  // whose out is a list: ExecuTorch still passes the out list a second time).
  rt::Error count_either(size_t n, size_t n_with_return) const {
    return count(nargs_ == n_with_return ? n_with_return : n);
  }

  // The out list repeated as the return value (argument i, when count_either() let the call
  // carry it): same tensors, in order.
  rt::Error optional_returned_list(size_t i, const rt::ArrayRef<rt::Tensor*>& out) const {
    if (i >= nargs_) {
      return rt::Error::Ok;
    }
    RT_TRY(expect_tag(i, "return", rt::Tag::TensorList));
    const rt::ArrayRef<rt::Tensor*>& ret = args_[i]->u.tensor_list;
    bool same = ret.size == out.size && (ret.data != nullptr || ret.size == 0);
    for (size_t k = 0; same && k < out.size; ++k) {
      same = aliases(ret[k], out[k]);
    }
    RT_CHECK(same, rt::Error::InvalidArgument, "%s: the return value does not alias out", op_);
    return rt::Error::Ok;
  }

  rt::Error tensor(size_t i, const char* name, rt::Tensor*& out) const {
    out = nullptr;
    RT_TRY(expect_tag(i, name, rt::Tag::Tensor));
    out = args_[i]->u.t;
    return check_tensor(name, out);
  }

  // None -> nullptr.
  rt::Error optional_tensor(size_t i, const char* name, rt::Tensor*& out) const {
    if (args_[i]->is_none()) {
      out = nullptr;
      return rt::Error::Ok;
    }
    return tensor(i, name, out);
  }

  rt::Error integer(size_t i, const char* name, int64_t& out) const {
    out = 0;
    RT_TRY(expect_tag(i, name, rt::Tag::Int));
    out = args_[i]->u.i;
    return rt::Error::Ok;
  }

  rt::Error optional_integer(size_t i, const char* name, Optional<int64_t>& out) const {
    out.present = !args_[i]->is_none();
    out.value = 0;
    return out.present ? integer(i, name, out.value) : rt::Error::Ok;
  }

  // A schema `float`: serialized as Double; an Int is accepted and widened.
  rt::Error floating(size_t i, const char* name, double& out) const {
    out = 0.0;
    const rt::Value& v = *args_[i];
    RT_CHECK(v.is_double() || v.is_int(), rt::Error::InvalidArgument, "%s: %s (argument %u) must be a float, got %s",
             op_, name, static_cast<unsigned>(i), rt::tag_name(v.tag));
    out = v.is_double() ? v.u.d : static_cast<double>(v.u.i);
    return rt::Error::Ok;
  }

  rt::Error boolean(size_t i, const char* name, bool& out) const {
    out = false;
    RT_TRY(expect_tag(i, name, rt::Tag::Bool));
    out = args_[i]->u.b;
    return rt::Error::Ok;
  }

  rt::Error scalar(size_t i, const char* name, Scalar& out) const {
    out = Scalar{rt::Tag::Int, 0, 0.0, false};
    const rt::Value& v = *args_[i];
    RT_CHECK(v.is_scalar(), rt::Error::InvalidArgument, "%s: %s (argument %u) must be a Scalar, got %s", op_, name,
             static_cast<unsigned>(i), rt::tag_name(v.tag));
    out.tag = v.tag;
    out.i = v.is_int() ? v.u.i : 0;
    out.d = v.is_double() ? v.u.d : 0.0;
    out.b = v.is_bool() ? v.u.b : false;
    return rt::Error::Ok;
  }

  rt::Error optional_scalar(size_t i, const char* name, Optional<Scalar>& out) const {
    out.present = !args_[i]->is_none();
    out.value = Scalar{rt::Tag::Int, 0, 0.0, false};
    return out.present ? scalar(i, name, out.value) : rt::Error::Ok;
  }

  rt::Error int_list(size_t i, const char* name, rt::ArrayRef<int64_t>& out) const {
    out = rt::ArrayRef<int64_t>{nullptr, 0};
    RT_TRY(expect_tag(i, name, rt::Tag::IntList));
    out = args_[i]->u.int_list;
    RT_CHECK(out.data != nullptr || out.size == 0, rt::Error::InvalidArgument, "%s: %s has no data", op_, name);
    return rt::Error::Ok;
  }

  rt::Error optional_int_list(size_t i, const char* name, Optional<rt::ArrayRef<int64_t>>& out) const {
    out.present = !args_[i]->is_none();
    out.value = rt::ArrayRef<int64_t>{nullptr, 0};
    return out.present ? int_list(i, name, out.value) : rt::Error::Ok;
  }

  rt::Error double_list(size_t i, const char* name, rt::ArrayRef<double>& out) const {
    out = rt::ArrayRef<double>{nullptr, 0};
    RT_TRY(expect_tag(i, name, rt::Tag::DoubleList));
    out = args_[i]->u.double_list;
    RT_CHECK(out.data != nullptr || out.size == 0, rt::Error::InvalidArgument, "%s: %s has no data", op_, name);
    return rt::Error::Ok;
  }

  rt::Error optional_double_list(size_t i, const char* name, Optional<rt::ArrayRef<double>>& out) const {
    out.present = !args_[i]->is_none();
    out.value = rt::ArrayRef<double>{nullptr, 0};
    return out.present ? double_list(i, name, out.value) : rt::Error::Ok;
  }

  // Every entry checked like a single tensor argument.
  rt::Error tensor_list(size_t i, const char* name, rt::ArrayRef<rt::Tensor*>& out) const {
    out = rt::ArrayRef<rt::Tensor*>{nullptr, 0};
    RT_TRY(expect_tag(i, name, rt::Tag::TensorList));
    out = args_[i]->u.tensor_list;
    RT_CHECK(out.data != nullptr || out.size == 0, rt::Error::InvalidArgument, "%s: %s has no data", op_, name);
    for (size_t k = 0; k < out.size; ++k) {
      RT_CHECK(out[k] != nullptr, rt::Error::InvalidArgument, "%s: %s[%u] is null", op_, name,
               static_cast<unsigned>(k));
      RT_TRY(check_tensor(name, out[k]));
    }
    return rt::Error::Ok;
  }

  // A schema `Tensor?[]` (index's indices): entries may be null (a dim taken whole); every
  // present one checked like a single tensor argument.
  rt::Error optional_tensor_list(size_t i, const char* name, rt::ArrayRef<rt::Tensor*>& out) const {
    out = rt::ArrayRef<rt::Tensor*>{nullptr, 0};
    RT_TRY(expect_tag(i, name, rt::Tag::OptionalTensorList));
    out = args_[i]->u.tensor_list;
    RT_CHECK(out.data != nullptr || out.size == 0, rt::Error::InvalidArgument, "%s: %s has no data", op_, name);
    for (size_t k = 0; k < out.size; ++k) {
      if (out[k] != nullptr) RT_TRY(check_tensor(name, out[k]));
    }
    return rt::Error::Ok;
  }

  // A schema `str?` (div's rounding_mode): the characters, not NUL-terminated.
  rt::Error optional_string(size_t i, const char* name, Optional<rt::ArrayRef<char>>& out) const {
    out.present = !args_[i]->is_none();
    out.value = rt::ArrayRef<char>{nullptr, 0};
    if (!out.present) return rt::Error::Ok;
    RT_TRY(expect_tag(i, name, rt::Tag::String));
    out.value = args_[i]->u.s;
    RT_CHECK(out.value.data != nullptr || out.value.size == 0, rt::Error::InvalidArgument, "%s: %s has no data",
             op_, name);
    return rt::Error::Ok;
  }

  // A schema `ScalarType`: an Int holding a known dtype code.
  rt::Error dtype(size_t i, const char* name, rt::ScalarType& out) const {
    out = rt::ScalarType::Float;
    int64_t code = 0;
    RT_TRY(integer(i, name, code));
    RT_CHECK(code >= 0 && code < 64 && rt::element_size(static_cast<rt::ScalarType>(code)) != 0,
             rt::Error::InvalidArgument, "%s: %s = %d is not a supported dtype", op_, name, static_cast<int>(code));
    out = static_cast<rt::ScalarType>(code);
    return rt::Error::Ok;
  }

  rt::Error optional_dtype(size_t i, const char* name, Optional<rt::ScalarType>& out) const {
    out.present = !args_[i]->is_none();
    out.value = rt::ScalarType::Float;
    return out.present ? dtype(i, name, out.value) : rt::Error::Ok;
  }

  // The trailing return value: must be the tensor written as `out`.
  rt::Error returned(size_t i, const rt::Tensor* out) const {
    RT_TRY(expect_tag(i, "return", rt::Tag::Tensor));
    RT_CHECK(aliases(args_[i]->u.t, out), rt::Error::InvalidArgument,
             "%s: the return value does not alias out", op_);
    return rt::Error::Ok;
  }

 private:
  // `ret` is `out`, or a tensor over the same bytes.
  static bool aliases(const rt::Tensor* ret, const rt::Tensor* out) {
    return ret == out || (ret != nullptr && ret->data == out->data && ret->nbytes == out->nbytes);
  }

  rt::Error expect_tag(size_t i, const char* name, rt::Tag tag) const {
    RT_CHECK(i < nargs_, rt::Error::Internal, "%s: argument %u out of range", op_, static_cast<unsigned>(i));
    RT_CHECK(args_[i]->tag == tag, rt::Error::InvalidArgument, "%s: %s (argument %u) must be %s, got %s", op_, name,
             static_cast<unsigned>(i), rt::tag_name(tag), rt::tag_name(args_[i]->tag));
    return rt::Error::Ok;
  }

  // Guards every later index computation: sizes, numel and nbytes must agree.
  rt::Error check_tensor(const char* name, const rt::Tensor* t) const {
    RT_CHECK(t != nullptr, rt::Error::InvalidArgument, "%s: %s is a null tensor", op_, name);
    RT_CHECK(t->dim <= rt::kMaxDims, rt::Error::InvalidArgument, "%s: %s has %u dims (max %d)", op_, name,
             static_cast<unsigned>(t->dim), rt::kMaxDims);
    const size_t esize = rt::element_size(t->dtype);
    RT_CHECK(esize != 0, rt::Error::DtypeMismatch, "%s: %s has unsupported dtype %d", op_, name,
             static_cast<int>(t->dtype));
    uint64_t numel = 1;
    for (int d = 0; d < t->dim; ++d) {
      RT_CHECK(t->sizes[d] >= 0, rt::Error::InvalidArgument, "%s: %s has a negative size", op_, name);
      numel *= static_cast<uint64_t>(t->sizes[d]);
      RT_CHECK(numel <= 0x7fffffffu, rt::Error::InvalidArgument, "%s: %s is too large", op_, name);
    }
    RT_CHECK(numel == t->numel && t->nbytes == t->numel * esize, rt::Error::Internal,
             "%s: %s has inconsistent numel/nbytes", op_, name);
    RT_CHECK(t->data != nullptr || t->nbytes == 0, rt::Error::Internal, "%s: %s has no data", op_, name);
    return rt::Error::Ok;
  }

  const char* op_;
  rt::Value* const* args_;
  size_t nargs_;
};

}  // namespace kernels
