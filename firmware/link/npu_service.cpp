// The virtual Ethos-U55 (docs/link.md "Virtual U55"): for a board whose NPU is absent, the
// Ethos-U driver's platform hooks batch its register writes and carry them, with a read or the
// wait for the interrupt, to the host's model of the U55 (NPU_REGS); inside that exchange the
// host reads, writes and hashes the memory the NPU may reach (NPU_READ/WRITE/HASH) until its
// NPU_DONE.
#include <stdio.h>
#include <string.h>

#include "console.h"
#include "messages.h"
#include "platform.h"
#include "server.h"

namespace hostlink {
namespace {

using rt::ul;

// "0x00000000_12345678": a 64-bit NPU address in a reason (printf has no %llx on the target).
struct AddressText {
  char text[24];
};
AddressText address_text(uint64_t a) {
  AddressText t;
  snprintf(t.text, sizeof(t.text), "0x%08lx_%08lx", ul(static_cast<uint32_t>(a >> 32)),
           ul(static_cast<uint32_t>(a)));
  return t;
}

}  // namespace

ethosu::NpuPlatform Server::virtual_u55_platform(const ethosu::NpuPlatform& board,
                                                 void (*raise_irq)(void)) {
  ethosu::NpuPlatform p = board;
  p.read32 = u55_read32;
  p.write32 = u55_write32;
  p.wait_for_irq = u55_wait_for_irq;
  p.ctx = this;
  raise_irq_ = raise_irq;
  return p;
}

uint32_t Server::u55_read32(void* ctx, uint32_t offset) {
  return static_cast<Server*>(ctx)->npu_exchange(offset);
}

void Server::u55_write32(void* ctx, uint32_t offset, uint32_t value) {
  auto* server = static_cast<Server*>(ctx);
  if (server->npu_write_count_ == kMaxNpuWrites) {
    server->npu_exchange(kNpuNoRead);
  }
  if (server->npu_write_count_ < kMaxNpuWrites) {
    server->npu_writes_[server->npu_write_count_++] = {offset, value};
  }
}

// The host executes a started NPU inside the exchange that carries the CMD write: when its
// answer has not raised the interrupt, none will come (nothing runs on the host between
// exchanges), so the wait ends at once instead of spending the driver's timeout.
bool Server::u55_wait_for_irq(void* ctx, const volatile bool* irq_done, uint32_t) {
  auto* server = static_cast<Server*>(ctx);
  if (!*irq_done && server->npu_write_count_ > 0) {
    server->npu_exchange(kNpuNoRead);
  }
  return *irq_done;
}

uint32_t Server::npu_exchange(uint32_t read_offset) {
  if (npu_failure_[0] != '\0' && serving_) {
    npu_write_count_ = 0;
    return 0;  // this request's link to the host failed already: fail fast
  }
  if (!serving_ || exchange_open_) {
    snprintf(npu_failure_, sizeof(npu_failure_), "%s",
             exchange_open_ ? "a register access inside an exchange"
                            : "a register access outside a host request (no host to ask)");
    npu_write_count_ = 0;
    return 0;
  }
  uint64_t start = clock_();
  npu_read_offset_ = read_offset;
  exchange_open_ = true;
  exchange_done_ = false;
  exchange_request_seen_ = false;
  exchange_value_ = 0;
  exchange_irq_ = irq_line_;
  kept_valid_ = false;
  send_npu_regs();
  const uint64_t hz = platform_tick_hz();
  const uint64_t announce_after = kNpuAnnounceSeconds * hz;
  const uint64_t give_up_after = kNpuTimeoutSeconds * hz;
  uint64_t last_heard = start;
  uint64_t last_announced = start;
  bool closed = false;
  while (!exchange_done_) {
    uint8_t byte = 0;
    if (take_byte(&byte)) {
      process_byte(byte);
      if (exchange_request_seen_) {
        exchange_request_seen_ = false;
        last_heard = clock_();
      }
      continue;
    }
    if (read_chunk()) {
      continue;
    }
    uint64_t now = clock_();
    if (now - last_heard >= give_up_after) {
      break;
    }
    uint64_t quiet_since = last_heard > last_announced ? last_heard : last_announced;
    if (now - quiet_since >= announce_after) {
      transport_.write(regs_wire_, regs_wire_size_);  // it (or the host's answer) was lost
      last_announced = now;
    }
    if (!transport_.wait()) {
      closed = true;
      break;
    }
  }
  exchange_open_ = false;
  npu_write_count_ = 0;
  ++serving_exchanges_;
  ++exchanges_total_;
  serving_npu_ticks_ += clock_() - start;
  if (!exchange_done_) {
    snprintf(npu_failure_, sizeof(npu_failure_), "the host did not answer NPU_REGS%s",
             closed ? " (the link closed)" : "");
    return 0;
  }
  // The NPU's interrupt is level-triggered; the NVIC takes it once per rising edge here. The
  // handler runs at once and makes exchanges of its own: this one's value is kept first.
  const uint32_t value = exchange_value_;
  bool rising = exchange_irq_ && !irq_line_;
  irq_line_ = exchange_irq_;
  if (rising && raise_irq_ != nullptr) {
    raise_irq_();
  }
  return value;
}

void Server::send_npu_regs() {
  uint8_t body[kMinBody + kNpuRegsMaxSize];
  uint8_t* out = body + kHeaderSize;
  put_u16(out + kNpuRegsExchange, serving_exchanges_);
  put_u16(out + kNpuRegsCount, static_cast<uint16_t>(npu_write_count_));
  put_u32(out + kNpuRegsRead, npu_read_offset_);
  for (size_t i = 0; i < npu_write_count_; ++i) {
    uint8_t* entry = out + kNpuRegsSize + i * kNpuWriteEntrySize;
    put_u32(entry + kNpuWriteEntryOffset, npu_writes_[i].offset);
    put_u32(entry + kNpuWriteEntryValue, npu_writes_[i].value);
  }
  size_t size = kNpuRegsSize + npu_write_count_ * kNpuWriteEntrySize;
  // flags 0: not a response; seq: the request being served
  size_t n = build_body(kNpuRegs, serving_seq_, session_id_, 0, out, size, body, sizeof(body));
  regs_wire_size_ = n == 0 ? 0 : encode_wire(body, n, regs_wire_, sizeof(regs_wire_));
  transport_.write(regs_wire_, regs_wire_size_);
}

void Server::handle_in_exchange(const Frame& request) {
  exchange_request_seen_ = true;
  if (request.kind == serving_kind_ && request.seq == serving_seq_ &&
      request.session == session_id_) {
    transport_.write(regs_wire_, regs_wire_size_);  // the host never saw NPU_REGS
    return;
  }
  if (answer_again(request)) {
    return;
  }
  rt::clear_error();
  rt::Error err = rt::Error::Ok;
  size_t n = 0;
  if (request.session != session_id_) {
    err = wrong_session(request);
  } else if (request.kind == kNpuRead) {
    err = on_npu_read(request, &n);
  } else if (request.kind == kNpuWrite) {
    err = on_npu_write(request, &n);
  } else if (request.kind == kNpuHash) {
    err = on_npu_hash(request, &n);
  } else if (request.kind == kNpuWriteFile) {
    err = on_npu_write_file(request, &n);
  } else if (request.kind == kNpuDone) {
    err = on_npu_done(request, &n);
  } else {
    err = rt::fail(rt::Error::BadMessage,
                   "%s: a virtual U55 exchange is open (exchange %u of the %s seq %u): only "
                   "NPU_READ, NPU_WRITE, NPU_WRITE_FILE, NPU_HASH, NPU_DONE",
                   kind_name(request.kind), serving_exchanges_, kind_name(serving_kind_),
                   serving_seq_);
  }
  answer(request, err, n);
}

uint8_t* Server::npu_memory(uint64_t address, uint64_t length, bool write) const {
  struct Window {
    const uint8_t* data;
    size_t size;
    bool writable;
  };
  const Window windows[] = {
      {config_.program_slot.data, config_.program_slot.size, false},  // the NPU reads weights
      {config_.embedded_program.data, config_.embedded_program.size, false},
      {config_.memory.planned.data, config_.memory.planned.size, true},
      {config_.memory.scratch.data, config_.memory.scratch.size, true},
      {config_.memory.npu_arena.data, config_.memory.npu_arena.size, true},
      {config_.input_stash.data, config_.input_stash.size, true},
  };
  for (const Window& w : windows) {
    uint64_t base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(w.data));
    if (w.data == nullptr || address < base || address - base > w.size ||
        length > w.size - (address - base)) {
      continue;
    }
    if (write && !w.writable) {
      return nullptr;
    }
    return const_cast<uint8_t*>(w.data) + (address - base);
  }
  return nullptr;
}

rt::Error Server::on_npu_read(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kNpuMemorySize));
  uint64_t address = get_u64(request.payload + kNpuMemoryAddress);
  uint32_t length = get_u32(request.payload + kNpuMemoryLength);
  RT_CHECK(length <= kMaxPayload, rt::Error::BadMessage,
           "NPU_READ of %lu bytes: at most %lu per request", ul(length), ul(kMaxPayload));
  const uint8_t* data = npu_memory(address, length, false);
  RT_CHECK(data != nullptr, rt::Error::InvalidArgument,
           "NPU_READ of %lu bytes at %s: outside the memory the NPU may reach", ul(length),
           address_text(address).text);
  if (length > 0) {
    memcpy(tx_payload(), data, length);
  }
  *n = length;
  return rt::Error::Ok;
}

rt::Error Server::on_npu_write(const Frame& request, size_t* n) {
  RT_CHECK(request.length >= kNpuWriteSize, rt::Error::BadMessage,
           "NPU_WRITE payload is %lu bytes, shorter than its %lu-byte address", ul(request.length),
           ul(kNpuWriteSize));
  uint64_t address = get_u64(request.payload + kNpuWriteAddress);
  size_t length = request.length - kNpuWriteSize;
  uint8_t* data = npu_memory(address, length, true);
  RT_CHECK(data != nullptr, rt::Error::InvalidArgument,
           "NPU_WRITE of %lu bytes at %s: outside the memory the NPU may write", ul(length),
           address_text(address).text);
  if (length > 0) {
    memcpy(data, request.payload + kNpuWriteSize, length);
  }
  put_u32(tx_payload() + kU32ReplyValue, static_cast<uint32_t>(length));
  *n = kU32ReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_npu_write_file(const Frame& request, size_t* n) {
  RT_CHECK(request.length >= kNpuWriteFileSize, rt::Error::BadMessage,
           "NPU_WRITE_FILE payload is %lu bytes, at least %lu", ul(request.length),
           ul(kNpuWriteFileSize));
  const uint8_t* p = request.payload;
  uint64_t address = get_u64(p + kNpuWriteFileAddress);
  uint32_t length = get_u32(p + kNpuWriteFileLength);
  RT_CHECK(get_u16(p + kNpuWriteFileReserved) == 0, rt::Error::BadMessage,
           "NPU_WRITE_FILE: reserved bytes are not 0");
  char name[kMaxFileName + 1];
  RT_TRY(take_file_name(request, kNpuWriteFileSize, get_u16(p + kNpuWriteFileNameLength), name));
  uint8_t* data = npu_memory(address, length, true);
  RT_CHECK(data != nullptr, rt::Error::InvalidArgument,
           "NPU_WRITE_FILE of %lu bytes at %s: outside the memory the NPU may write", ul(length),
           address_text(address).text);
  int read = platform_host_read_file(name, data, length);
  RT_CHECK(read != -1, rt::Error::NotSupported,
           "NPU_WRITE_FILE: this firmware has no semihosting (built with exit=park)");
  RT_CHECK(read == 0, rt::Error::InvalidArgument,
           "NPU_WRITE_FILE: the host's file '%s' %s %lu bytes", name,
           read == -2 ? "would not open: no" : "does not hold exactly", ul(length));
  uint8_t* out = tx_payload();
  put_u32(out + kNpuWriteFileReplyWritten, length);
  put_u32(out + kNpuWriteFileReplyCrc32, runner::crc32(data, length));
  *n = kNpuWriteFileReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_npu_hash(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kNpuMemorySize));
  uint64_t address = get_u64(request.payload + kNpuMemoryAddress);
  uint32_t length = get_u32(request.payload + kNpuMemoryLength);
  const uint8_t* data = npu_memory(address, length, false);
  RT_CHECK(data != nullptr, rt::Error::InvalidArgument,
           "NPU_HASH of %lu bytes at %s: outside the memory the NPU may reach", ul(length),
           address_text(address).text);
  sha256(data, length, tx_payload());
  *n = kSha256Size;
  return rt::Error::Ok;
}

rt::Error Server::on_npu_done(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kNpuDoneSize));
  const uint8_t* p = request.payload;
  RT_CHECK(p[kNpuDoneIrq] <= 1, rt::Error::BadMessage, "NPU_DONE irq %u, expected 0 or 1",
           p[kNpuDoneIrq]);
  for (size_t i = kNpuDoneReserved; i < kNpuDoneSize; ++i) {
    RT_CHECK(p[i] == 0, rt::Error::BadMessage, "NPU_DONE: reserved bytes are not 0");
  }
  exchange_value_ = npu_read_offset_ == kNpuNoRead ? 0 : get_u32(p + kNpuDoneValue);
  exchange_irq_ = p[kNpuDoneIrq] == 1;
  exchange_done_ = true;
  done_valid_ = true;
  done_seq_ = request.seq;
  done_session_ = request.session;
  *n = 0;
  return rt::Error::Ok;
}

}  // namespace hostlink
