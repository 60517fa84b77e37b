// The host-link server (see server.h, docs/link.md).
#include "server.h"

#include <stdio.h>
#include <string.h>

#include "platform.h"
#include "console.h"
#include "rt/kernel.h"
#include "runner.h"

namespace hostlink {
namespace {

using rt::ul;

static_assert(kLoadBeginSize == kLoadBeginSha256 + kSha256Size, "LOAD_BEGIN carries a SHA-256");
constexpr size_t kMaxTextLength = 255;               // u8-length strings

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

const char* kind_name(uint8_t kind) {
  switch (kind) {
    case kHello: return "HELLO";
    case kConnect: return "CONNECT";
    case kInfo: return "INFO";
    case kLoadBegin: return "LOAD_BEGIN";
    case kLoadData: return "LOAD_DATA";
    case kLoadEnd: return "LOAD_END";
    case kLoadSlot: return "LOAD_SLOT";
    case kSetInput: return "SET_INPUT";
    case kRun: return "RUN";
    case kGetOutput: return "GET_OUTPUT";
    case kStats: return "STATS";
    case kReset: return "RESET";
    case kLinkTest: return "LINK_TEST";
    case kProfile: return "PROFILE";
    case kNpuRegs: return "NPU_REGS";
    case kNpuRead: return "NPU_READ";
    case kNpuWrite: return "NPU_WRITE";
    case kNpuDone: return "NPU_DONE";
    case kNpuHash: return "NPU_HASH";
    case kNak: return "NAK";
    case kError: return "ERROR";
    default: return "unknown";
  }
}

// Printable ASCII only, as the host shows reasons.
uint8_t printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return u < 0x20 || u > 0x7e ? '?' : (c == '"' ? '\'' : u);
}

// The variable tail of a payload (after its contract layout) over a fixed buffer: bytes and
// strings appended; `full` once anything did not fit.
class Writer {
 public:
  Writer(uint8_t* data, size_t capacity) : data_(data), capacity_(capacity) {}
  Writer& u8(uint8_t v) { return put(&v, 1); }
  Writer& put(const void* p, size_t n) {
    if (n > capacity_ - size_) {
      full_ = true;
      return *this;
    }
    memcpy(data_ + size_, p, n);
    size_ += n;
    return *this;
  }
  // u8 length + bytes, cut to 255 and to printable ASCII.
  Writer& text(const char* s) {
    size_t n = strlen(s);
    n = n > kMaxTextLength ? kMaxTextLength : n;
    if (n + 1 > capacity_ - size_) {
      full_ = true;
      return *this;
    }
    data_[size_++] = static_cast<uint8_t>(n);
    for (size_t i = 0; i < n; ++i) data_[size_++] = printable(s[i]);
    return *this;
  }
  size_t size() const { return size_; }
  size_t room() const { return capacity_ - size_; }
  bool full() const { return full_; }

 private:
  uint8_t* data_;
  size_t capacity_;
  size_t size_ = 0;
  bool full_ = false;
};

rt::Error expect_size(const Frame& request, size_t size) {
  RT_CHECK(request.length == size, rt::Error::BadMessage, "%s payload is %lu bytes, expected %lu",
           kind_name(request.kind), ul(request.length), ul(size));
  return rt::Error::Ok;
}

// The contract's tensor header (contract.h offsets), written where `w` stands.
void put_tensor_header(Writer& w, uint16_t index, const rt::Tensor& t, uint32_t offset,
                       uint32_t crc) {
  uint8_t h[kTensorHeaderSize] = {};
  put_u16(h + kTensorHeaderIndex, index);
  h[kTensorHeaderDtype] = static_cast<uint8_t>(t.dtype);
  h[kTensorHeaderNdim] = t.dim;
  put_u32(h + kTensorHeaderNbytes, static_cast<uint32_t>(t.nbytes));
  put_u32(h + kTensorHeaderOffset, offset);
  put_u32(h + kTensorHeaderCrc32, crc);
  for (int d = 0; d < t.dim && d < kMaxDims; ++d) {
    put_u32(h + kTensorHeaderSizes + 4 * d, static_cast<uint32_t>(t.sizes[d]));
  }
  w.put(h, sizeof(h));
}

}  // namespace

Server::Server(Transport& transport, const ServerConfig& config)
    : transport_(transport), config_(config), runner_(config.memory) {
  runner_.set_observer(&Server::profile_step, this);
}

void Server::boot() {
  forget_program();
  session_id_ = 0;
  kept_valid_ = false;
  serving_ = false;
  exchange_open_ = false;
  npu_write_count_ = 0;
  irq_line_ = false;
  done_valid_ = false;
  deframer_.clear();
  sink_remaining_ = 0;
  reset_pending_ = false;
  if (config_.embedded_program.size > 0) {
    uint8_t sha[kSha256Size];
    sha256(config_.embedded_program.data, config_.embedded_program.size, sha);
    rt::clear_error();
    rt::Error err = load_program(config_.embedded_program, sha);
    if (err != rt::Error::Ok) {
      // Console text before HELLO: INFO says program_loaded=0, this says why.
      size_t n = 0;
      auto add = [&](const char* text) {
        for (; *text != '\0' && n + 1 < sizeof(tx_body_); ++text) {
          tx_body_[n++] = printable(*text);
        }
      };
      add("executor_runner: the embedded program did not load: ");
      add(rt::error_name(err));
      add(": ");
      add(rt::last_error_reason());
      tx_body_[n++] = '\n';
      transport_.write(tx_body_, n);
    }
  }
  size_t n = info_payload();
  size_t body = build_body(kHello, 0, 0, kFlagResponse, tx_payload(), n, tx_body_,
                           sizeof(tx_body_));
  size_t wire = encode_wire(tx_body_, body, kept_wire_, sizeof(kept_wire_));
  transport_.write(kept_wire_, wire);
}

void Server::serve() {
  uint8_t chunk[256];
  for (;;) {
    size_t n = transport_.read(chunk, sizeof(chunk));
    if (n > 0) {
      receive(chunk, n);
    } else if (!transport_.wait()) {
      return;
    }
  }
}

void Server::receive(const uint8_t* data, size_t size) {
  rx_data_ = data;
  rx_size_ = size;
  rx_pos_ = 0;
  uint8_t byte = 0;
  // A virtual U55 exchange inside a request takes bytes from here too (take_byte), in order.
  while (!reset_pending_ && take_byte(&byte)) {
    process_byte(byte);
  }
  rx_data_ = nullptr;
  rx_size_ = 0;
  rx_pos_ = 0;
  if (reset_pending_) {
    // What followed RESET is lost, as on a board whose reset takes the UART with it.
    rx_chunk_size_ = 0;
    rx_chunk_pos_ = 0;
    transport_.flush();
    transport_.reset();
    boot();
  }
}

bool Server::take_byte(uint8_t* byte) {
  if (rx_pos_ < rx_size_) {
    *byte = rx_data_[rx_pos_++];
    return true;
  }
  if (rx_chunk_pos_ < rx_chunk_size_) {
    *byte = rx_chunk_[rx_chunk_pos_++];
    return true;
  }
  return false;
}

void Server::process_byte(uint8_t byte) {
  if (sink_remaining_ > 0) {
    if (--sink_remaining_ == 0) {
      link_test_done();
    }
    return;
  }
  NakReason why = NakReason::BadHeader;
  Deframer::Event event = deframer_.push(byte, &why);
  if (event == Deframer::Event::Body) {
    handle_body(deframer_.body(), deframer_.body_size());
  } else if (event == Deframer::Event::Dropped) {
    send_nak(why);
  }
}

void Server::handle_body(const uint8_t* body, size_t size) {
  Frame request;
  NakReason why = NakReason::BadHeader;
  if (!parse_body(body, size, &request, &why)) {
    send_nak(why);
    return;
  }
  if ((request.flags & kFlagResponse) != 0) {
    send_nak(NakReason::BadHeader);  // a response is never a request
    return;
  }
  handle(request);
}

void Server::handle(const Frame& request) {
  if (exchange_open_) {
    handle_in_exchange(request);
    return;
  }
  // A retransmission: the kept answer, without doing the work again.
  if (kept_valid_ && request.seq == kept_seq_ && request.kind == kept_kind_ &&
      request.session == kept_session_) {
    transport_.write(kept_wire_, kept_size_);
    return;
  }
  // The host lost the answer to the NPU_DONE that ended an exchange; the request went on (and
  // may have been answered since, which took the kept slot). The answer is empty: again.
  if (done_valid_ && request.kind == kNpuDone && request.seq == done_seq_ &&
      request.session == done_session_) {
    send_small(kNpuDone, request.seq, kFlagResponse, nullptr, 0);
    return;
  }
  rt::clear_error();
  rt::Error err = rt::Error::Ok;
  size_t n = 0;
  if (request.kind != kConnect && request.session != session_id_) {
    err = rt::fail(rt::Error::BadMessage, "%s for session 0x%08lx, the firmware's is 0x%08lx",
                   kind_name(request.kind), ul(request.session), ul(session_id_));
  } else {
    uint64_t start = platform_ticks();
    serving_ = true;
    serving_kind_ = request.kind;
    serving_seq_ = request.seq;
    serving_exchanges_ = 0;
    serving_npu_ticks_ = 0;
    npu_failure_[0] = '\0';
    // A new request: the last answer is never asked for again, and must not stand in for the
    // answer to a request inside one of its exchanges.
    kept_valid_ = false;
    err = dispatch(request, &n);
    serving_ = false;
    if (npu_failure_[0] != '\0') {
      // The driver saw a register file that was not the NPU's: never a pass.
      if (err == rt::Error::Ok) {
        err = rt::fail(rt::Error::DelegateFailed, "the virtual U55 failed during %s",
                       kind_name(request.kind));
      }
      outputs_ = Outputs::None;  // a RUN answered with an ERROR has no outputs to read
      rt::add_context("the virtual U55: %s", npu_failure_);
    }
    uint64_t ticks = platform_ticks() - start;
    if (request.kind == kLoadBegin || request.kind == kLoadData || request.kind == kLoadEnd ||
        request.kind == kLoadSlot) {
      stats_load_ticks_ += ticks;
    } else if (request.kind == kSetInput) {
      stats_input_ticks_ += ticks;
    } else if (request.kind == kGetOutput) {
      stats_output_ticks_ += ticks;
    }
  }
  kept_kind_ = request.kind;
  kept_seq_ = request.seq;
  kept_session_ = request.session;
  if (err != rt::Error::Ok) {
    send_error(err, request.kind, request.seq);
    return;
  }
  send(request.kind, request.seq, n, true);
  if (request.kind == kReset) {
    reset_pending_ = true;
  } else if (request.kind == kLinkTest) {
    link_test_start_ = platform_ticks();
    link_test_seq_ = request.seq;
    if (request.payload[0] == kLinkTestSource) {
      uint8_t pattern[64];
      memset(pattern, 0x55, sizeof(pattern));
      for (uint32_t left = link_test_count_; left > 0;) {
        uint32_t n_out = left < sizeof(pattern) ? left : static_cast<uint32_t>(sizeof(pattern));
        transport_.write(pattern, n_out);
        left -= n_out;
      }
      link_test_done();
    } else {
      sink_remaining_ = link_test_count_;
      if (sink_remaining_ == 0) {
        link_test_done();
      }
    }
  }
}

rt::Error Server::dispatch(const Frame& request, size_t* n) {
  switch (request.kind) {
    case kConnect:
      return on_connect(request, n);
    case kInfo:
      RT_TRY(expect_size(request, 0));
      *n = info_payload();
      return rt::Error::Ok;
    case kLoadBegin:
      return on_load_begin(request, n);
    case kLoadData:
      return on_load_data(request, n);
    case kLoadEnd:
      return on_load_end(request, n);
    case kLoadSlot:
      return on_load_slot(request, n);
    case kSetInput:
      return on_set_input(request, n);
    case kRun:
      return on_run(request, n);
    case kGetOutput:
      return on_get_output(request, n);
    case kStats:
      RT_TRY(expect_size(request, 0));
      return on_stats(n);
    case kReset:
      RT_TRY(expect_size(request, 0));
      *n = 0;
      return rt::Error::Ok;
    case kLinkTest:
      return on_link_test(request, n);
    case kProfile:
      return on_profile(request, n);
    case kNpuRead:
    case kNpuWrite:
    case kNpuHash:
    case kNpuDone:
      return rt::fail(rt::Error::BadMessage, "%s: no virtual U55 exchange is open",
                      kind_name(request.kind));
    case kNpuRegs:
      return rt::fail(rt::Error::BadMessage, "NPU_REGS comes from the firmware, not the host");
    default:
      return rt::fail(rt::Error::BadMessage, "unknown request kind 0x%02x (%s)", request.kind,
                      kind_name(request.kind));
  }
}

rt::Error Server::on_connect(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kConnectSize));
  session_id_ = get_u32(request.payload + kConnectSession);
  load_state_ = LoadState::Idle;  // a new host starts its loads afresh
  done_valid_ = false;
  *n = info_payload();
  return rt::Error::Ok;
}

rt::Error Server::on_load_begin(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kLoadBeginSize));
  forget_program();
  uint32_t size = get_u32(request.payload + kLoadBeginProgramSize);
  RT_CHECK(size <= config_.program_slot.size, rt::Error::OutOfMemory,
           "a program of %lu bytes does not fit the %lu-byte program slot", ul(size),
           ul(config_.program_slot.size));
  load_state_ = LoadState::Receiving;
  load_size_ = size;
  load_received_ = 0;
  memcpy(load_sha_, request.payload + kLoadBeginSha256, kSha256Size);
  load_hash_.reset();
  put_u32(tx_payload() + kU32ReplyValue, static_cast<uint32_t>(config_.program_slot.size));
  *n = kU32ReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_load_data(const Frame& request, size_t* n) {
  RT_CHECK(request.length >= kLoadDataSize, rt::Error::BadMessage,
           "LOAD_DATA payload is %lu bytes, at least %lu", ul(request.length), ul(kLoadDataSize));
  RT_CHECK(load_state_ == LoadState::Receiving, rt::Error::BadMessage,
           "LOAD_DATA without a LOAD_BEGIN");
  uint32_t offset = get_u32(request.payload + kLoadDataOffset);
  size_t size = request.length - kLoadDataSize;
  RT_CHECK(offset == load_received_, rt::Error::BadMessage,
           "LOAD_DATA chunk at offset %lu, expected %lu (chunks come in order)", ul(offset),
           ul(load_received_));
  RT_CHECK(size <= load_size_ - load_received_, rt::Error::BadMessage,
           "LOAD_DATA chunk of %lu bytes at offset %lu passes the announced %lu bytes", ul(size),
           ul(offset), ul(load_size_));
  memcpy(config_.program_slot.data + offset, request.payload + kLoadDataSize, size);
  load_hash_.update(request.payload + kLoadDataSize, size);
  load_received_ += static_cast<uint32_t>(size);
  put_u32(tx_payload() + kU32ReplyValue, load_received_);
  *n = kU32ReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_load_end(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, 0));
  RT_CHECK(load_state_ == LoadState::Receiving, rt::Error::BadMessage,
           "LOAD_END without a LOAD_BEGIN");
  RT_CHECK(load_received_ == load_size_, rt::Error::BadMessage,
           "LOAD_END after %lu of the announced %lu bytes", ul(load_received_), ul(load_size_));
  load_state_ = LoadState::Idle;
  uint8_t digest[kSha256Size];
  load_hash_.finish(digest);
  RT_CHECK(memcmp(digest, load_sha_, kSha256Size) == 0, rt::Error::InvalidProgram,
           "the program's SHA-256 is not the one LOAD_BEGIN announced (corrupt transfer)");
  RT_TRY(load_program({config_.program_slot.data, load_size_}, digest));
  *n = loaded_payload();
  return rt::Error::Ok;
}

rt::Error Server::on_load_slot(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kLoadBeginSize));
  forget_program();
  uint32_t size = get_u32(request.payload + kLoadBeginProgramSize);
  rt::ConstBytes program;
  RT_TRY(runner::open_program_blob(config_.program_slot.data, config_.program_slot.size,
                                   &program));
  if (runner::is_bundle(program)) {  // a .bpte: its program, read where it lies
    RT_TRY(runner::program_in_bundle(program, &program));
  }
  RT_CHECK(program.size == size, rt::Error::InvalidProgram,
           "the program slot's blob holds %lu bytes, LOAD_SLOT announced %lu", ul(program.size),
           ul(size));
  uint8_t digest[kSha256Size];
  sha256(program.data, program.size, digest);
  RT_CHECK(memcmp(digest, request.payload + kLoadBeginSha256, kSha256Size) == 0,
           rt::Error::InvalidProgram, "the program slot's SHA-256 is not the one LOAD_SLOT announced");
  RT_TRY(load_program(program, digest));
  *n = loaded_payload();
  return rt::Error::Ok;
}

rt::Error Server::on_set_input(const Frame& request, size_t* n) {
  RT_CHECK(runner_.loaded(), rt::Error::BadMessage, "SET_INPUT: no program loaded");
  RT_CHECK(request.length >= kTensorHeaderSize, rt::Error::BadMessage,
           "SET_INPUT payload is %lu bytes, shorter than its %lu-byte header", ul(request.length),
           ul(kTensorHeaderSize));
  const uint8_t* p = request.payload;
  uint16_t index = get_u16(p + kTensorHeaderIndex);
  runner::TensorDesc desc = {p[kTensorHeaderDtype], p[kTensorHeaderNdim],
                             get_u32(p + kTensorHeaderNbytes), {}};
  uint32_t offset = get_u32(p + kTensorHeaderOffset);
  RT_CHECK(get_u32(p + kTensorHeaderCrc32) == 0, rt::Error::BadMessage,
           "SET_INPUT: the crc32 field is not 0");
  RT_CHECK(desc.ndim <= rt::kMaxDims, rt::Error::BadMessage,
           "SET_INPUT: %u dimensions, at most %d", desc.ndim, rt::kMaxDims);
  for (int d = 0; d < rt::kMaxDims; ++d) {
    desc.sizes[d] = static_cast<int32_t>(get_u32(p + kTensorHeaderSizes + 4 * d));
    RT_CHECK(d < desc.ndim || desc.sizes[d] == 0, rt::Error::BadMessage,
             "SET_INPUT: size %d beyond its %u dimensions is not 0", d, desc.ndim);
  }
  RT_CHECK(index < runner_.num_inputs(), rt::Error::InputMismatch,
           "input %u: the program takes %lu inputs", index, ul(runner_.num_inputs()));
  RT_TRY(runner_.check_input(index, desc));
  size_t size = request.length - kTensorHeaderSize;
  RT_CHECK(offset == 0 || offset == input_received_[index], rt::Error::BadMessage,
           "input %u: chunk at offset %lu, expected %lu (chunks come in order)", index,
           ul(offset), ul(input_received_[index]));
  RT_CHECK(size <= desc.nbytes - offset, rt::Error::BadMessage,
           "input %u: chunk of %lu bytes at offset %lu passes its %lu bytes", index, ul(size),
           ul(offset), ul(desc.nbytes));
  RT_TRY(runner_.write_input(index, offset, p + kTensorHeaderSize, size));
  if (stash_needed_ <= config_.input_stash.size && size > 0) {
    memcpy(config_.input_stash.data + stash_offset_[index] + offset, p + kTensorHeaderSize, size);
  }
  input_received_[index] = offset + static_cast<uint32_t>(size);
  input_set_[index] = input_received_[index] == desc.nbytes;
  input_fresh_[index] = input_set_[index];
  outputs_ = Outputs::None;  // an output may share an input's memory (an identity program)
  uint8_t* out = tx_payload();
  memset(out, 0, kSetInputReplySize);
  put_u16(out + kSetInputReplyIndex, index);
  put_u32(out + kSetInputReplyReceived, input_received_[index]);
  *n = kSetInputReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_run(const Frame& request, size_t* n) {
  outputs_ = Outputs::None;  // whatever this RUN turns out to be, the last one's are gone
  crc_index_ = SIZE_MAX;
  profile_valid_ = false;  // and so is its profile, until an iteration passes
  RT_TRY(expect_size(request, kRunSize));
  uint32_t iterations = get_u32(request.payload + kRunIterations);
  RT_CHECK(iterations >= 1, rt::Error::BadMessage, "RUN: 0 iterations");
  RT_CHECK(runner_.loaded(), rt::Error::BadMessage, "RUN: no program loaded");
  for (size_t i = 0; i < runner_.num_inputs(); ++i) {
    RT_CHECK(input_set_[i], rt::Error::BadMessage,
             "RUN: input %lu has not been set since the LOAD (%lu of its bytes arrived)", ul(i),
             ul(input_received_[i]));
  }
  RT_TRY(runner_.check_outputs());
  runner::RunTiming timing = {0, 0, 0, 0, 0};
  rt::Error err = rt::Error::Ok;
  bool first_execute_failed = false;  // the outputs hold what that execute() left, no more
  for (uint32_t it = 0; it < iterations && err == rt::Error::Ok; ++it) {
    err = restore_inputs();  // outside the timed execute()
    if (err != rt::Error::Ok) {
      break;
    }
    runner::RunTiming one;
    profile_count_ = 0;  // each iteration's profile replaces the last one's
    profile_dropped_ = 0;
    err = runner_.execute(1, &one);
    profile_run_ticks_ = static_cast<uint32_t>(clock_() - profile_start_);
    profile_npu_wait_ = static_cast<uint32_t>(serving_npu_ticks_ - profile_npu_start_);
    profile_valid_ = err == rt::Error::Ok && profile_count_ > 0;
    first_execute_failed = err != rt::Error::Ok && it == 0;
    if (err != rt::Error::Ok && iterations > 1) {
      rt::add_context("iteration %lu of %lu", ul(it + 1), ul(iterations));
    }
    timing.total_ticks += one.total_ticks;
    timing.last_ticks = one.last_ticks;
    if (err == rt::Error::Ok) {
      timing.min_ticks = it == 0 || one.last_ticks < timing.min_ticks ? one.last_ticks : timing.min_ticks;
      timing.max_ticks = one.last_ticks > timing.max_ticks ? one.last_ticks : timing.max_ticks;
      timing.iterations = it + 1;
    }
  }
  stats_runs_ += timing.iterations;
  stats_run_ticks_ += timing.total_ticks;
  stats_last_run_ticks_ = timing.last_ticks;
  if (err != rt::Error::Ok) {
    outputs_ = first_execute_failed && runner_.outputs_are_tensors() ? Outputs::Failed
                                                                    : Outputs::None;
    return err;
  }
  for (size_t i = 0; i < runner_.num_outputs(); ++i) {
    const rt::Tensor* tensor = nullptr;
    RT_TRY(runner_.output_tensor(i, &tensor));
  }
  outputs_ = Outputs::Passed;
  uint8_t* out = tx_payload();
  put_u32(out + kRunReplyIterations, timing.iterations);
  put_u32(out + kRunReplyTickHz, platform_tick_hz());
  put_u64(out + kRunReplyTotalTicks, timing.total_ticks);
  put_u64(out + kRunReplyMinTicks, timing.min_ticks);
  put_u64(out + kRunReplyMaxTicks, timing.max_ticks);
  put_u64(out + kRunReplyVirtualNpuTicks, serving_npu_ticks_);
  *n = kRunReplySize;
  return rt::Error::Ok;
}

rt::Error Server::on_get_output(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kGetOutputSize));
  uint16_t index = get_u16(request.payload + kGetOutputIndex);
  uint32_t offset = get_u32(request.payload + kGetOutputOffset);
  uint32_t max_bytes = get_u32(request.payload + kGetOutputMaxBytes);
  uint16_t flags = get_u16(request.payload + kGetOutputFlags);
  RT_CHECK((flags & ~kGetOutputAfterFailure) == 0, rt::Error::BadMessage,
           "GET_OUTPUT: unknown flags 0x%04x", flags);
  bool after_failure = (flags & kGetOutputAfterFailure) != 0;
  RT_CHECK(outputs_ == (after_failure ? Outputs::Failed : Outputs::Passed), rt::Error::BadMessage,
           after_failure ? "GET_OUTPUT: the last RUN did not fail leaving tensor outputs"
                         : "GET_OUTPUT: no RUN has passed since the program or an input was set");
  RT_CHECK(index < runner_.num_outputs(), rt::Error::BadMessage,
           "GET_OUTPUT: no output %u (the program has %lu)", index, ul(runner_.num_outputs()));
  const rt::Tensor* tensor = nullptr;
  RT_TRY(runner_.output_tensor(index, &tensor));
  RT_CHECK(offset <= tensor->nbytes, rt::Error::BadMessage,
           "GET_OUTPUT: offset %lu passes output %u's %lu bytes", ul(offset), index,
           ul(tensor->nbytes));
  size_t size = tensor->nbytes - offset;
  size = size < max_bytes ? size : max_bytes;
  size = size < kMaxPayload - kTensorHeaderSize ? size : kMaxPayload - kTensorHeaderSize;
  const uint8_t* data = static_cast<const uint8_t*>(tensor->data);
  if (crc_index_ != index) {  // once per output, not once per chunk
    crc_value_ = runner::crc32(data, tensor->nbytes);
    crc_index_ = index;
  }
  Writer w(tx_payload(), kMaxPayload);
  put_tensor_header(w, index, *tensor, offset, crc_value_);
  w.put(data + offset, size);
  *n = w.size();
  return rt::Error::Ok;
}

rt::Error Server::on_stats(size_t* n) {
  uint8_t* out = tx_payload();
  memset(out, 0, kStatsReplySize);
  put_u32(out + kStatsReplyTickHz, platform_tick_hz());
  put_u32(out + kStatsReplyRuns, stats_runs_);
  put_u64(out + kStatsReplyLoadTicks, stats_load_ticks_);
  put_u64(out + kStatsReplyInputTicks, stats_input_ticks_);
  put_u64(out + kStatsReplyRunTicks, stats_run_ticks_);
  put_u64(out + kStatsReplyLastRunTicks, stats_last_run_ticks_);
  put_u64(out + kStatsReplyOutputTicks, stats_output_ticks_);
  // The NPU's own PMU cycle count since the LOAD; 0 (and npu_counters 0) when no hardware NPU
  // ran: the virtual U55 is not timed.
  uint64_t npu_cycles = ethosu::npu_cycles();
  put_u32(out + kStatsReplyNpuCounters, npu_cycles > 0 ? 1 : 0);
  put_u64(out + kStatsReplyNpuCycles, npu_cycles);
  *n = kStatsReplySize;
  return rt::Error::Ok;
}

void Server::profile_step(void* ctx, size_t pc) {
  auto* server = static_cast<Server*>(ctx);
  uint64_t now = server->clock_();
  if (server->profile_count_ == 0 && server->profile_dropped_ == 0) {
    server->profile_start_ = now;
    server->profile_npu_start_ = server->serving_npu_ticks_;
  }
  if (server->profile_count_ == kMaxProfileEvents) {
    ++server->profile_dropped_;
    return;
  }
  ProfileEvent& e = server->profile_[server->profile_count_++];
  e.pc = static_cast<uint32_t>(pc);
  e.start = static_cast<uint32_t>(now - server->profile_start_);
  e.npu_wait = static_cast<uint32_t>(server->serving_npu_ticks_ - server->profile_npu_start_);
}

rt::Error Server::on_profile(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kProfileSize));
  uint32_t first = get_u32(request.payload + kProfileFirst);
  RT_CHECK(profile_valid_, rt::Error::BadMessage,
           "PROFILE: no RUN has passed since the LOAD (or the program runs no instruction)");
  RT_CHECK(first <= profile_count_, rt::Error::BadMessage,
           "PROFILE: event %lu of %lu recorded", ul(first), ul(profile_count_));
  size_t room = (kMaxPayload - kProfileReplySize) / kProfileEventSize;
  uint32_t count = profile_count_ - first < room ? profile_count_ - first : room;
  uint8_t* out = tx_payload();
  put_u32(out + kProfileReplyTotal, profile_count_);
  put_u32(out + kProfileReplyDropped, profile_dropped_);
  put_u32(out + kProfileReplyFirst, first);
  put_u32(out + kProfileReplyCount, count);
  put_u32(out + kProfileReplyRunTicks, profile_run_ticks_);
  put_u32(out + kProfileReplyTickHz, platform_tick_hz());
  put_u32(out + kProfileReplyNpuWaitTicks, profile_npu_wait_);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t* e = out + kProfileReplySize + i * kProfileEventSize;
    put_u32(e + kProfileEventPc, profile_[first + i].pc);
    put_u32(e + kProfileEventStart, profile_[first + i].start);
    put_u32(e + kProfileEventNpuWait, profile_[first + i].npu_wait);
  }
  *n = kProfileReplySize + count * kProfileEventSize;
  return rt::Error::Ok;
}

rt::Error Server::on_link_test(const Frame& request, size_t* n) {
  RT_TRY(expect_size(request, kLinkTestSize));
  const uint8_t* p = request.payload;
  uint8_t mode = p[kLinkTestMode];
  RT_CHECK(mode == kLinkTestSink || mode == kLinkTestSource, rt::Error::BadMessage,
           "LINK_TEST mode %u, expected %u (sink) or %u (source)", mode, kLinkTestSink,
           kLinkTestSource);
  for (size_t i = kLinkTestReserved; i < kLinkTestCount; ++i) {
    RT_CHECK(p[i] == 0, rt::Error::BadMessage, "LINK_TEST: reserved bytes are not 0");
  }
  link_test_count_ = get_u32(p + kLinkTestCount);
  *n = link_test_reply(0);
  return rt::Error::Ok;
}

void Server::link_test_done() {
  uint64_t ticks = platform_ticks() - link_test_start_;
  kept_kind_ = kLinkTest;
  kept_seq_ = link_test_seq_;
  kept_session_ = session_id_;
  send(kLinkTest, link_test_seq_, link_test_reply(ticks), true);
}

size_t Server::link_test_reply(uint64_t ticks) {
  uint8_t* out = tx_payload();
  memset(out, 0, kLinkTestReplySize);
  put_u32(out + kLinkTestReplyCount, link_test_count_);
  put_u64(out + kLinkTestReplyTicks, ticks);
  return kLinkTestReplySize;
}

size_t Server::info_payload() {
  static_assert(kInfoProgramSha256 + kSha256Size == kInfoSize, "INFO ends with the SHA-256");
  uint8_t* out = tx_payload();
  memset(out, 0, kInfoSize);
  put_u16(out + kInfoProtocolVersion, kProtocolVersion);
  put_u32(out + kInfoMaxPayload, kMaxPayload);
  put_u32(out + kInfoTickHz, platform_tick_hz());
  put_u32(out + kInfoNpuId, config_.npu_id);
  put_u32(out + kInfoNpuConfig, config_.npu_config_register);
  put_u32(out + kInfoMetadataBytes, static_cast<uint32_t>(config_.memory.metadata.size));
  put_u32(out + kInfoPlannedBytes, static_cast<uint32_t>(config_.memory.planned.size));
  put_u32(out + kInfoScratchBytes, static_cast<uint32_t>(config_.memory.scratch.size));
  put_u32(out + kInfoProgramSlotBytes, static_cast<uint32_t>(config_.program_slot.size));
  out[kInfoProgramLoaded] = runner_.loaded() ? 1 : 0;
  memcpy(out + kInfoProgramSha256, program_sha_, kSha256Size);
  Writer w(out + kInfoSize, kMaxPayload - kInfoSize);
  w.text(config_.firmware_version).text(config_.board).text(config_.npu_config);
  size_t total = rt::kKernelTableSize;
  uint16_t listed = 0;
  uint8_t counts[kKernelCountsSize] = {};
  put_u16(counts + kKernelCountsTotal, static_cast<uint16_t>(total));
  size_t counts_at = w.size();
  w.put(counts, sizeof(counts));
  // As many operator names as fit the payload; kernels_total tells what was left out.
  for (size_t i = 0; i < total && listed < UINT16_MAX; ++i) {
    size_t len = strlen(rt::kKernelTable[i].name);
    if ((len > kMaxTextLength ? kMaxTextLength : len) + 1 > w.room()) {
      break;
    }
    w.text(rt::kKernelTable[i].name);
    ++listed;
  }
  put_u16(out + kInfoSize + counts_at + kKernelCountsListed, listed);
  return kInfoSize + w.size();
}

size_t Server::loaded_payload() {
  rt::MemoryUse use = runner_.memory_use();
  uint8_t* out = tx_payload();
  put_u64(out + kLoadedInitTicks, runner_.init_ticks());
  put_u32(out + kLoadedMetadataUsed, static_cast<uint32_t>(use.metadata_used));
  put_u32(out + kLoadedMetadataSize, static_cast<uint32_t>(use.metadata_size));
  put_u32(out + kLoadedPlannedUsed, static_cast<uint32_t>(use.planned_used));
  put_u32(out + kLoadedPlannedSize, static_cast<uint32_t>(use.planned_size));
  put_u16(out + kLoadedNumInputs, static_cast<uint16_t>(runner_.num_inputs()));
  put_u16(out + kLoadedNumOutputs, static_cast<uint16_t>(runner_.num_outputs()));
  return kLoadedSize;
}

rt::Error Server::load_program(rt::ConstBytes program, const uint8_t sha[kSha256Size]) {
  forget_program();
  rt::Error err = runner_.load(program);
  if (err == rt::Error::Ok && runner_.num_inputs() > kMaxInputs) {
    err = rt::fail(rt::Error::NotSupported, "the program has %lu inputs, the link takes at most %lu",
                   ul(runner_.num_inputs()), ul(kMaxInputs));
  }
  if (err == rt::Error::Ok && runner_.num_outputs() > UINT16_MAX) {
    err = rt::fail(rt::Error::NotSupported, "the program has %lu outputs", ul(runner_.num_outputs()));
  }
  // Where each input's copy goes in the stash (16-byte aligned, checked sums).
  for (size_t i = 0; err == rt::Error::Ok && i < runner_.num_inputs(); ++i) {
    const rt::Tensor* tensor = nullptr;
    err = runner_.input_tensor(i, &tensor);
    if (err == rt::Error::Ok) {
      stash_offset_[i] = stash_needed_;
      size_t next = rt::align_up(stash_needed_ + tensor->nbytes, 16);  // < 2^31 each, <= 64
      stash_needed_ = next;
    }
  }
  if (err != rt::Error::Ok) {
    runner_.unload();
    stash_needed_ = 0;
    return err;
  }
  memcpy(program_sha_, sha, kSha256Size);
  return rt::Error::Ok;
}

rt::Error Server::restore_inputs() {
  bool all_fresh = true;
  for (size_t i = 0; i < runner_.num_inputs(); ++i) {
    all_fresh = all_fresh && input_fresh_[i];
  }
  RT_CHECK(all_fresh || stash_needed_ <= config_.input_stash.size, rt::Error::OutOfMemory,
           "the inputs need %lu bytes to be kept between runs, the stash has %lu: set them "
           "again before each RUN of 1 iteration",
           ul(stash_needed_), ul(config_.input_stash.size));
  for (size_t i = 0; i < runner_.num_inputs(); ++i) {
    if (input_fresh_[i]) {
      input_fresh_[i] = false;  // the coming execute() may reuse its memory
      continue;
    }
    const rt::Tensor* tensor = nullptr;
    RT_TRY(runner_.input_tensor(i, &tensor));
    RT_TRY(runner_.write_input(i, 0, config_.input_stash.data + stash_offset_[i], tensor->nbytes));
  }
  return rt::Error::Ok;
}

void Server::forget_program() {
  runner_.unload();
  ethosu::reset_cycles();
  load_state_ = LoadState::Idle;
  memset(program_sha_, 0, sizeof(program_sha_));
  memset(input_received_, 0, sizeof(input_received_));
  memset(input_set_, 0, sizeof(input_set_));
  memset(stash_offset_, 0, sizeof(stash_offset_));
  stash_needed_ = 0;
  memset(input_fresh_, 0, sizeof(input_fresh_));
  profile_valid_ = false;
  outputs_ = Outputs::None;
  crc_index_ = SIZE_MAX;
  stats_runs_ = 0;
  stats_load_ticks_ = 0;
  stats_input_ticks_ = 0;
  stats_run_ticks_ = 0;
  stats_last_run_ticks_ = 0;
  stats_output_ticks_ = 0;
}

void Server::send(uint8_t kind, uint16_t seq, size_t payload_size, bool keep) {
  size_t body = build_body(kind, seq, session_id_, kFlagResponse, tx_payload(), payload_size,
                           tx_body_, sizeof(tx_body_));
  size_t wire = encode_wire(tx_body_, body, kept_wire_, sizeof(kept_wire_));
  kept_size_ = wire;
  kept_valid_ = keep;  // kept_kind_/seq_/session_ name the request: set by the caller
  transport_.write(kept_wire_, wire);
}

// ---- The virtual Ethos-U55 (docs/link.md "Virtual U55") -------------------------------------

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
    size_t got = transport_.read(rx_chunk_, sizeof(rx_chunk_));
    if (got > 0) {
      rx_chunk_size_ = got;
      rx_chunk_pos_ = 0;
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
  if (kept_valid_ && request.seq == kept_seq_ && request.kind == kept_kind_ &&
      request.session == kept_session_) {
    transport_.write(kept_wire_, kept_size_);
    return;
  }
  // The previous exchange's NPU_DONE again (its answer was lost): never this one's end.
  if (done_valid_ && request.kind == kNpuDone && request.seq == done_seq_ &&
      request.session == done_session_) {
    send_small(kNpuDone, request.seq, kFlagResponse, nullptr, 0);
    return;
  }
  rt::clear_error();
  rt::Error err = rt::Error::Ok;
  size_t n = 0;
  if (request.session != session_id_) {
    err = rt::fail(rt::Error::BadMessage, "%s for session 0x%08lx, the firmware's is 0x%08lx",
                   kind_name(request.kind), ul(request.session), ul(session_id_));
  } else if (request.kind == kNpuRead) {
    err = on_npu_read(request, &n);
  } else if (request.kind == kNpuWrite) {
    err = on_npu_write(request, &n);
  } else if (request.kind == kNpuHash) {
    err = on_npu_hash(request, &n);
  } else if (request.kind == kNpuDone) {
    err = on_npu_done(request, &n);
  } else {
    err = rt::fail(rt::Error::BadMessage,
                   "%s: a virtual U55 exchange is open (exchange %u of the %s seq %u): only "
                   "NPU_READ, NPU_WRITE, NPU_HASH, NPU_DONE",
                   kind_name(request.kind), serving_exchanges_, kind_name(serving_kind_),
                   serving_seq_);
  }
  kept_kind_ = request.kind;
  kept_seq_ = request.seq;
  kept_session_ = request.session;
  if (err != rt::Error::Ok) {
    send_error(err, request.kind, request.seq);
    return;
  }
  send(request.kind, request.seq, n, true);
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

void Server::send_small(uint8_t kind, uint16_t seq, uint8_t flags, const uint8_t* payload,
                        size_t size) {
  uint8_t body[kMinBody + kSmallPayload];
  uint8_t wire[cobs_max_encoded(sizeof(body)) + 2];
  size_t n = build_body(kind, seq, session_id_, flags, payload, size, body, sizeof(body));
  size_t w = n == 0 ? 0 : encode_wire(body, n, wire, sizeof(wire));
  transport_.write(wire, w);
}

void Server::send_nak(NakReason why) {
  uint8_t body[kMinBody + 1];
  body[kHeaderSize] = static_cast<uint8_t>(why);
  size_t size = build_body(kNak, 0, session_id_, kFlagResponse, body + kHeaderSize, 1, body,
                           sizeof(body));
  uint8_t wire[cobs_max_encoded(sizeof(body)) + 2];
  size_t n = encode_wire(body, size, wire, sizeof(wire));
  transport_.write(wire, n);
}

void Server::send_error(rt::Error err, uint8_t request_kind, uint16_t seq) {
  const char* name = rt::error_name(err);
  const char* reason = rt::last_error_reason();
  uint8_t* out = tx_payload();
  size_t name_length = strlen(name);
  out[kErrorCode] = static_cast<uint8_t>(err);
  out[kErrorNameLength] = static_cast<uint8_t>(name_length);
  put_u16(out + kErrorRequestKind, request_kind);
  Writer w(out + kErrorSize, kMaxPayload - kErrorSize);
  w.put(name, name_length);
  for (const char* c = reason; *c != '\0' && w.room() > 0; ++c) {
    w.u8(printable(*c));
  }
  send(kError, seq, kErrorSize + w.size(), true);
}

}  // namespace hostlink
