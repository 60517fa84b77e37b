// See case_runner.h. The format (little-endian, every record padded to 8 bytes):
//   header:  "KCASE001", u32 n_arenas, n_values, n_instrs, n_inits, u32 fill, u32 reserved
//   arenas:  u64 size                                   x n_arenas
//   values:  u32 tag, u32 payload bytes, payload        x n_values
//            Int i64 | Double f64 | Bool u64 | None - |
//            Tensor: u32 dtype, u32 dim, i32 sizes[8], u32 arena, u32 0, u64 offset |
//            IntList: u64 n, i64[n] | TensorList: u64 n, u32 value[n]
//   instrs:  u32 name bytes, u32 nargs, name, u32 arg value[nargs]   x n_instrs
//   inits:   u32 arena, u32 0, u64 offset, u64 nbytes, bytes         x n_inits
// Result:    "KRES0001", u32 error code, u32 failed instruction (or ~0), u32 reason bytes,
//            u32 n_arenas, reason, then per arena u64 size + bytes.
#include "case_runner.h"

#include <string.h>

#include "rt/error.h"
#include "rt/kernel.h"
#include "rt/scalar_type.h"
#include "rt/tensor.h"
#include "rt/value.h"

namespace harness {

void* BumpPool::take(size_t n) {
  const size_t start = (used_ + 15u) & ~size_t{15};
  if (start > size_ || n > size_ - start) return nullptr;
  used_ = start + n;
  return base_ + start;
}

namespace {

size_t pad8(size_t n) { return (n + 7u) & ~size_t{7}; }

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  const uint8_t* at(size_t n) {
    if (!ok_ || n > n_ - pos_) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* r = p_ + pos_;
    pos_ += pad8(n) <= n_ - pos_ ? pad8(n) : n;
    return r;
  }
  uint32_t u32() {
    const uint8_t* r = raw(4);
    uint32_t v = 0;
    if (r != nullptr) memcpy(&v, r, 4);
    return v;
  }
  uint64_t u64() {
    const uint8_t* r = raw(8);
    uint64_t v = 0;
    if (r != nullptr) memcpy(&v, r, 8);
    return v;
  }
  const uint8_t* raw(size_t n) {  // unpadded
    if (!ok_ || n > n_ - pos_) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* r = p_ + pos_;
    pos_ += n;
    return r;
  }
  void align8() { pos_ = pad8(pos_) <= n_ ? pad8(pos_) : n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class Writer {
 public:
  Writer(uint8_t* p, size_t cap) : p_(p), cap_(cap) {}
  void bytes(const void* d, size_t n) {
    if (!ok_ || pad8(n) > cap_ - pos_) {
      ok_ = false;
      return;
    }
    if (n != 0) memcpy(p_ + pos_, d, n);
    memset(p_ + pos_ + n, 0, pad8(n) - n);
    pos_ += pad8(n);
  }
  void u32(uint32_t v) {
    if (!ok_ || 4 > cap_ - pos_) {
      ok_ = false;
      return;
    }
    memcpy(p_ + pos_, &v, 4);
    pos_ += 4;
  }
  void u64(uint64_t v) { bytes(&v, 8); }
  size_t size() const { return ok_ ? pos_ : 0; }

 private:
  uint8_t* p_;
  size_t cap_;
  size_t pos_ = 0;
  bool ok_ = true;
};

rt::KernelFn find_kernel(const char* name, size_t len) {
  for (size_t i = 0; i < rt::kKernelTableSize; ++i) {
    const char* k = rt::kKernelTable[i].name;
    if (k != nullptr && strlen(k) == len && memcmp(k, name, len) == 0) return rt::kKernelTable[i].fn;
  }
  return nullptr;
}

}  // namespace

size_t run_case(const uint8_t* case_data, size_t case_size, Pool& pool, uint8_t* result, size_t result_cap,
                const char** why) {
  auto bad = [&](const char* reason) {
    *why = reason;
    return size_t{0};
  };
  Reader r(case_data, case_size);
  const uint8_t* magic = r.raw(8);
  if (magic == nullptr || memcmp(magic, "KCASE001", 8) != 0) return bad("not a case file");
  const uint32_t n_arenas = r.u32(), n_values = r.u32(), n_instrs = r.u32(), n_inits = r.u32();
  const uint32_t fill = r.u32();
  (void)r.u32();
  if (!r.ok() || n_arenas > 64 || n_values > 100000 || n_instrs > 100000) return bad("bad header");

  uint8_t** arenas = static_cast<uint8_t**>(pool.take(sizeof(uint8_t*) * (n_arenas + 1)));
  uint64_t* arena_sizes = static_cast<uint64_t*>(pool.take(sizeof(uint64_t) * (n_arenas + 1)));
  if (arenas == nullptr || arena_sizes == nullptr) return bad("pool exhausted");
  for (uint32_t i = 0; i < n_arenas; ++i) {
    arena_sizes[i] = r.u64();
    arenas[i] = static_cast<uint8_t*>(pool.take(static_cast<size_t>(arena_sizes[i])));
    if (!r.ok() || arenas[i] == nullptr) return bad("arena does not fit the pool");
    memset(arenas[i], static_cast<int>(fill & 0xffu), static_cast<size_t>(arena_sizes[i]));
  }

  rt::Value* values = static_cast<rt::Value*>(pool.take(sizeof(rt::Value) * (n_values + 1)));
  if (values == nullptr) return bad("pool exhausted");
  for (uint32_t v = 0; v < n_values; ++v) {
    const uint32_t tag = r.u32();
    const uint32_t len = r.u32();
    const uint8_t* payload = r.at(len);
    if (!r.ok()) return bad("truncated value");
    rt::Value& val = values[v];
    memset(&val, 0, sizeof(val));
    val.tag = static_cast<rt::Tag>(tag);
    switch (val.tag) {
      case rt::Tag::None:
        break;
      case rt::Tag::Int:
        if (len != 8) return bad("bad Int");
        memcpy(&val.u.i, payload, 8);
        break;
      case rt::Tag::Double:
        if (len != 8) return bad("bad Double");
        memcpy(&val.u.d, payload, 8);
        break;
      case rt::Tag::Bool: {
        if (len != 8) return bad("bad Bool");
        uint64_t b;
        memcpy(&b, payload, 8);
        val.u.b = b != 0;
        break;
      }
      case rt::Tag::Tensor: {
        if (len != 56) return bad("bad Tensor");
        rt::Tensor* t = static_cast<rt::Tensor*>(pool.take(sizeof(rt::Tensor)));
        if (t == nullptr) return bad("pool exhausted");
        uint32_t dtype, dim, arena;
        uint64_t offset;
        memcpy(&dtype, payload, 4);
        memcpy(&dim, payload + 4, 4);
        memcpy(t->sizes, payload + 8, 32);
        memcpy(&arena, payload + 40, 4);
        memcpy(&offset, payload + 48, 8);
        if (dim > static_cast<uint32_t>(rt::kMaxDims) || arena >= n_arenas) return bad("bad tensor record");
        t->dtype = static_cast<rt::ScalarType>(dtype);
        t->dim = static_cast<uint8_t>(dim);
        size_t numel = 1;
        for (uint32_t d = 0; d < dim; ++d) numel *= static_cast<size_t>(t->sizes[d] < 0 ? 0 : t->sizes[d]);
        t->numel = numel;
        t->nbytes = numel * rt::element_size(t->dtype);
        if (offset > arena_sizes[arena] || t->nbytes > arena_sizes[arena] - offset) {
          return bad("tensor outside its arena");
        }
        t->data = arenas[arena] + offset;
        val.u.t = t;
        break;
      }
      case rt::Tag::IntList: {
        uint64_t n;
        if (len < 8) return bad("bad IntList");
        memcpy(&n, payload, 8);
        if (len != 8 + 8 * n) return bad("bad IntList");
        val.u.int_list = rt::ArrayRef<int64_t>{reinterpret_cast<const int64_t*>(payload + 8), static_cast<size_t>(n)};
        break;
      }
      case rt::Tag::TensorList: {
        uint64_t n;
        if (len < 8) return bad("bad TensorList");
        memcpy(&n, payload, 8);
        if (len != 8 + 4 * n) return bad("bad TensorList");
        rt::Tensor** items = static_cast<rt::Tensor**>(pool.take(sizeof(rt::Tensor*) * (n + 1)));
        if (items == nullptr) return bad("pool exhausted");
        for (uint64_t k = 0; k < n; ++k) {
          uint32_t idx;
          memcpy(&idx, payload + 8 + 4 * k, 4);
          if (idx >= v || values[idx].tag != rt::Tag::Tensor) return bad("TensorList item is not an earlier tensor");
          items[k] = values[idx].u.t;
        }
        val.u.tensor_list = rt::ArrayRef<rt::Tensor*>{items, static_cast<size_t>(n)};
        break;
      }
      default:
        return bad("unsupported value tag");
    }
  }

  // Instructions are parsed up front; inits follow them in the file.
  struct Instr {
    const char* name;
    uint32_t name_len;
    rt::KernelFn fn;
    rt::Value** args;
    uint32_t nargs;
  };
  Instr* instrs = static_cast<Instr*>(pool.take(sizeof(Instr) * (n_instrs + 1)));
  if (instrs == nullptr) return bad("pool exhausted");
  for (uint32_t i = 0; i < n_instrs; ++i) {
    Instr& in = instrs[i];
    in.name_len = r.u32();
    in.nargs = r.u32();
    in.name = reinterpret_cast<const char*>(r.at(in.name_len));
    const uint8_t* arg_idx = r.at(4u * in.nargs);
    if (!r.ok() || in.nargs > 64) return bad("bad instruction");
    in.fn = find_kernel(in.name, in.name_len);
    in.args = static_cast<rt::Value**>(pool.take(sizeof(rt::Value*) * (in.nargs + 1)));
    if (in.args == nullptr) return bad("pool exhausted");
    for (uint32_t k = 0; k < in.nargs; ++k) {
      uint32_t idx;
      memcpy(&idx, arg_idx + 4 * k, 4);
      if (idx >= n_values) return bad("argument index out of range");
      in.args[k] = &values[idx];
    }
  }
  for (uint32_t i = 0; i < n_inits; ++i) {
    const uint32_t arena = r.u32();
    (void)r.u32();
    const uint64_t offset = r.u64();
    const uint64_t nbytes = r.u64();
    const uint8_t* bytes = r.at(static_cast<size_t>(nbytes));
    if (!r.ok() || arena >= n_arenas || offset > arena_sizes[arena] || nbytes > arena_sizes[arena] - offset) {
      return bad("bad init record");
    }
    memcpy(arenas[arena] + offset, bytes, static_cast<size_t>(nbytes));
  }

  rt::Error status = rt::Error::Ok;
  uint32_t failed = 0xffffffffu;
  rt::clear_error();
  for (uint32_t i = 0; i < n_instrs && status == rt::Error::Ok; ++i) {
    rt::KernelContext ctx{nullptr, 0};
    if (instrs[i].fn == nullptr) {
      status = rt::fail(rt::Error::OperatorMissing, "%.*s: no kernel", static_cast<int>(instrs[i].name_len),
                        instrs[i].name);
    } else {
      status = instrs[i].fn(ctx, instrs[i].args, instrs[i].nargs);
    }
    if (status != rt::Error::Ok) failed = i;
  }

  Writer w(result, result_cap);
  w.bytes("KRES0001", 8);
  const char* reason = status == rt::Error::Ok ? "" : rt::last_error_reason();
  w.u32(static_cast<uint32_t>(status));
  w.u32(failed);
  w.u32(static_cast<uint32_t>(strlen(reason)));
  w.u32(n_arenas);
  w.bytes(reason, strlen(reason));
  for (uint32_t i = 0; i < n_arenas; ++i) {
    w.u64(arena_sizes[i]);
    w.bytes(arenas[i], static_cast<size_t>(arena_sizes[i]));
  }
  if (w.size() == 0) return bad("result buffer too small");
  return w.size();
}

}  // namespace harness
