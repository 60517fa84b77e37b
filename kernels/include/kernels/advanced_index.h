// PyTorch's advanced indexing, `x = in[indices]` with `indices` a `Tensor?[]`, in ExecuTorch's
// portable form (index.Tensor reads x, index_put writes through it).
//
// An entry is null (the dim taken whole), an integer index (Long or Int; negative counts from
// the end) or a mask (Bool or Byte, as many dims as it covers, each the size of in's). The
// integer indices broadcast together; a mask stands for the coordinates of its true entries,
// one broadcast dim of that length (a mask with one true entry broadcasts). x's shape: in's
// leading null dims, the broadcast dims, in's other dims when the indexed dims are adjacent;
// the broadcast dims first when they are not (numpy's rule).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/shape.h"
#include "rt/error.h"
#include "rt/tensor.h"
#include "rt/value.h"

namespace kernels {

struct AdvancedIndex {
  rt::ArrayRef<rt::Tensor*> indices;  // entries may be null
  int blocks = 0;                      // runs of consecutive non-null entries
  int start = 0;                       // x's first broadcast dim
  int bc_dim = 0;                      // the broadcast dims' count
  int dim = 0;                         // x's rank
  int32_t sizes[rt::kMaxDims] = {};    // x's shape
  size_t numel = 1;
  int8_t dim_map[rt::kMaxDims] = {};  // in dim -> x dim; -1 for an indexed dim
  int8_t ix_map[rt::kMaxDims] = {};   // in dim -> the entry that indexes it; -1 for none
  size_t trues[rt::kMaxDims] = {};     // entry -> a mask's true entries (counted once)
};

inline bool is_mask(const rt::Tensor& t) {
  return t.dtype == rt::ScalarType::Bool || t.dtype == rt::ScalarType::Byte;
}

inline size_t mask_count(const rt::Tensor& mask) {
  const uint8_t* m = mask.data_as<uint8_t>();  // Bool and Byte: one byte, nonzero is true
  size_t n = 0;
  for (size_t i = 0; i < mask.numel; ++i) n += m[i] != 0u ? 1u : 0u;
  return n;
}

// Entry j of an integer index (Int or Long).
inline int64_t index_entry(const rt::Tensor& index, size_t j) {
  return index.dtype == rt::ScalarType::Int ? static_cast<int64_t>(index.data_as<int32_t>()[j])
                                            : index.data_as<int64_t>()[j];
}

// Every entry of integer index indices[k] in [-size, size) (negative counts from the end).
inline rt::Error check_index_values(const char* op, const rt::Tensor& index, size_t k, int32_t size, int dim) {
  for (size_t j = 0; j < index.numel; ++j) {
    const int64_t v = index_entry(index, j);
    RT_CHECK(v >= -static_cast<int64_t>(size) && v < size, rt::Error::InvalidArgument,
             "%s: indices[%u][%u] = %d is out of bounds for dim %d of size %d", op, static_cast<unsigned>(k),
             static_cast<unsigned>(j), static_cast<int>(v), dim, static_cast<int>(size));
  }
  return rt::Error::Ok;
}

// Check `indices` against `in` and fill `ix`: x's shape and the maps from in's dims.
inline rt::Error prepare_index(const char* op, const rt::Tensor& in, rt::ArrayRef<rt::Tensor*> indices,
                               AdvancedIndex& ix) {
  ix = AdvancedIndex{};
  ix.indices = indices;
  for (int d = 0; d < rt::kMaxDims; ++d) ix.ix_map[d] = -1;
  RT_CHECK(indices.size <= in.dim, rt::Error::InvalidArgument, "%s: %u indices for a %d-d tensor", op,
           static_cast<unsigned>(indices.size), static_cast<int>(in.dim));
  int in_i = 0;  // in's dim the next entry starts at
  int indexed = 0;
  int nulls = 0;
  int rev_bc[rt::kMaxDims] = {};  // the broadcast shape, last dim first
  bool in_block = false;
  for (size_t k = 0; k < indices.size; ++k) {
    const rt::Tensor* t = indices[k];
    if (t == nullptr) {
      in_block = false;
      ++nulls;
      ++in_i;
      continue;
    }
    if (!in_block) ++ix.blocks;
    in_block = true;
    const rt::ScalarType dt = t->dtype;
    RT_CHECK(dt == rt::ScalarType::Long || dt == rt::ScalarType::Int || is_mask(*t), rt::Error::DtypeMismatch,
             "%s: indices[%u] has dtype %s (Long, Int, Byte or Bool)", op, static_cast<unsigned>(k),
             rt::scalar_type_name(dt));
    if (is_mask(*t)) {
      RT_CHECK(t->dim > 0, rt::Error::InvalidArgument, "%s: indices[%u] is a 0-d mask", op,
               static_cast<unsigned>(k));
      RT_CHECK(in_i + t->dim <= in.dim, rt::Error::InvalidArgument, "%s: indices[%u] covers dims past in's %d",
               op, static_cast<unsigned>(k), static_cast<int>(in.dim));
      for (int j = 0; j < t->dim; ++j) {
        RT_CHECK(t->sizes[j] == in.sizes[in_i + j], rt::Error::InvalidArgument,
                 "%s: mask indices[%u] of shape %s does not match in's dims from %d (%s)", op,
                 static_cast<unsigned>(k), ShapeStr(*t).c_str(), in_i, ShapeStr(in).c_str());
        ix.ix_map[in_i + j] = static_cast<int8_t>(k);
      }
      ix.trues[k] = mask_count(*t);
      const int32_t len = static_cast<int32_t>(ix.trues[k]);
      if (ix.bc_dim == 0) {
        ix.bc_dim = 1;
        rev_bc[0] = len;
      } else if (rev_bc[0] == 1) {
        rev_bc[0] = len;
      } else {
        RT_CHECK(len == 1 || rev_bc[0] == len, rt::Error::InvalidArgument,
                 "%s: mask indices[%u] (%d true) does not broadcast with the other indices", op,
                 static_cast<unsigned>(k), static_cast<int>(len));
      }
      in_i += t->dim;
      indexed += t->dim;
    } else {
      RT_CHECK(in_i < in.dim, rt::Error::InvalidArgument, "%s: indices[%u] indexes past in's %d dims", op,
               static_cast<unsigned>(k), static_cast<int>(in.dim));
      for (int j = 0; j < t->dim; ++j) {
        const int32_t s = t->sizes[t->dim - 1 - j];
        if (j >= ix.bc_dim) {
          ix.bc_dim = j + 1;
          rev_bc[j] = s;
        } else if (rev_bc[j] == 1) {
          rev_bc[j] = s;
        } else {
          RT_CHECK(s == 1 || rev_bc[j] == s, rt::Error::InvalidArgument,
                   "%s: indices[%u] of shape %s does not broadcast with the other indices", op,
                   static_cast<unsigned>(k), ShapeStr(*t).c_str());
        }
      }
      ix.ix_map[in_i] = static_cast<int8_t>(k);
      RT_TRY(check_index_values(op, *t, k, in.sizes[in_i], in_i));  // before anything is written
      ++in_i;
      ++indexed;
    }
  }
  RT_CHECK(nulls + indexed <= in.dim, rt::Error::InvalidArgument, "%s: indexing %d dims of a %d-d tensor", op,
           nulls + indexed, static_cast<int>(in.dim));
  int32_t bc[rt::kMaxDims] = {};
  for (int j = 0; j < ix.bc_dim; ++j) bc[j] = rev_bc[ix.bc_dim - 1 - j];
  if (ix.blocks == 0) {  // nothing indexed: x is in
    ix.dim = in.dim;
    for (int d = 0; d < in.dim; ++d) {
      ix.sizes[d] = in.sizes[d];
      ix.dim_map[d] = static_cast<int8_t>(d);
    }
    ix.numel = in.numel;
    return rt::Error::Ok;
  }
  const int out_dim = in.dim + ix.bc_dim - indexed;
  RT_CHECK(out_dim <= rt::kMaxDims, rt::Error::InvalidArgument, "%s: the result would have %d dims (max %d)", op,
           out_dim, rt::kMaxDims);
  ix.dim = out_dim;
  if (ix.blocks == 1) {  // adjacent: the broadcast dims stand where the indexed dims stood
    while (indices[static_cast<size_t>(ix.start)] == nullptr) ++ix.start;
    for (int d = 0; d < in.dim; ++d) {
      if (d < ix.start) {
        ix.dim_map[d] = static_cast<int8_t>(d);
      } else if (d < ix.start + indexed) {
        ix.dim_map[d] = -1;
      } else {
        ix.dim_map[d] = static_cast<int8_t>(d - indexed + ix.bc_dim);
      }
    }
  } else {  // apart: the broadcast dims first, then in's other dims in order
    int out_i = ix.bc_dim;
    for (int d = 0; d < in.dim; ++d) {
      ix.dim_map[d] = ix.ix_map[d] >= 0 ? static_cast<int8_t>(-1) : static_cast<int8_t>(out_i++);
    }
  }
  for (int j = 0; j < ix.bc_dim; ++j) ix.sizes[ix.start + j] = bc[j];
  for (int d = 0; d < in.dim; ++d) {
    if (ix.dim_map[d] >= 0) ix.sizes[ix.dim_map[d]] = in.sizes[d];
  }
  ix.numel = size_product(ix.sizes, 0, ix.dim);
  return rt::Error::Ok;
}

// The coordinate of a mask's `query`-th true entry (its only one when it has one: `trues`).
inline void mask_coord(const rt::Tensor& mask, size_t trues, size_t query, int32_t* coord) {
  const uint8_t* m = mask.data_as<uint8_t>();
  if (trues == 1) query = 0;
  size_t flat = 0;
  for (size_t i = 0, seen = 0; i < mask.numel; ++i) {
    if (m[i] == 0u) continue;
    if (seen++ == query) {
      flat = i;
      break;
    }
  }
  for (int d = mask.dim - 1; d >= 0; --d) {
    coord[d] = static_cast<int32_t>(flat % static_cast<size_t>(mask.sizes[d]));
    flat /= static_cast<size_t>(mask.sizes[d]);
  }
}

// The integer index's entry at broadcast coordinate bc[0..bc_dim) (right-aligned, size-1 dims
// broadcast).
inline int64_t index_value(const rt::Tensor& index, const int32_t* bc, int bc_dim) {
  size_t flat = 0;
  for (int d = 0; d < index.dim; ++d) {
    const int32_t c = index.sizes[d] == 1 ? 0 : bc[bc_dim - index.dim + d];
    flat = flat * static_cast<size_t>(index.sizes[d]) + static_cast<size_t>(c);
  }
  return index_entry(index, flat);
}

// The element offset in (contiguous) `in` of x's element at coordinate x_coord.
inline rt::Error source_offset(const char* op, const rt::Tensor& in, const AdvancedIndex& ix,
                               const int32_t* x_coord, size_t& offset) {
  const int32_t* bc = x_coord + ix.start;
  offset = 0;
  for (int d = 0; d < in.dim;) {
    if (ix.dim_map[d] >= 0) {
      offset = offset * static_cast<size_t>(in.sizes[d]) + static_cast<size_t>(x_coord[ix.dim_map[d]]);
      ++d;
      continue;
    }
    const size_t k = static_cast<size_t>(ix.ix_map[d]);
    const rt::Tensor& index = *ix.indices[k];
    if (is_mask(index)) {
      int32_t coord[rt::kMaxDims];
      mask_coord(index, ix.trues[k], static_cast<size_t>(bc[ix.bc_dim - 1]), coord);
      for (int j = 0; j < index.dim; ++j) {
        offset = offset * static_cast<size_t>(in.sizes[d + j]) + static_cast<size_t>(coord[j]);
      }
      d += index.dim;
      continue;
    }
    int64_t v = index_value(index, bc, ix.bc_dim);
    const int64_t size = in.sizes[d];
    const int64_t given = v;
    if (v < 0) v += size;
    RT_CHECK(v >= 0 && v < size, rt::Error::InvalidArgument, "%s: index %d is out of bounds for dim %d of size %d",
             op, static_cast<int>(given), d, static_cast<int>(size));
    offset = offset * static_cast<size_t>(size) + static_cast<size_t>(v);
    ++d;
  }
  return rt::Error::Ok;
}

// Step a row-major coordinate over sizes[0..dim).
inline void next_coord(int32_t* coord, const int32_t* sizes, int dim) {
  for (int d = dim - 1; d >= 0; --d) {
    if (++coord[d] < sizes[d]) return;
    coord[d] = 0;
  }
}

}  // namespace kernels
