// The link's request handlers (docs/link.md "Messages"): CONNECT, INFO, LOAD_*, SET_INPUT, RUN,
// GET_OUTPUT, STATS, LINK_TEST, and the program, inputs and outputs they keep. Each builds its
// payload at tx_payload() and returns its size, or an error with its reason.
#include <string.h>

#include "console.h"
#include "messages.h"
#include "platform.h"
#include "rt/kernel.h"
#include "runner.h"
#include "server.h"

namespace hostlink {
namespace {

using rt::ul;

static_assert(kLoadBeginSize == kLoadBeginSha256 + kSha256Size, "LOAD_BEGIN carries a SHA-256");

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

// SET_INPUT's and SET_INPUT_SLOT's tensor header, checked against the program's input.
rt::Error Server::take_input_header(const Frame& request, InputHeader* h) {
  RT_CHECK(runner_.loaded(), rt::Error::BadMessage, "%s: no program loaded",
           kind_name(request.kind));
  RT_CHECK(request.length >= kTensorHeaderSize, rt::Error::BadMessage,
           "%s payload is %lu bytes, shorter than its %lu-byte header", kind_name(request.kind),
           ul(request.length), ul(kTensorHeaderSize));
  const uint8_t* p = request.payload;
  h->index = get_u16(p + kTensorHeaderIndex);
  h->desc = {p[kTensorHeaderDtype], p[kTensorHeaderNdim], get_u32(p + kTensorHeaderNbytes), {}};
  h->offset = get_u32(p + kTensorHeaderOffset);
  h->crc = get_u32(p + kTensorHeaderCrc32);
  RT_CHECK(h->desc.ndim <= rt::kMaxDims, rt::Error::BadMessage,
           "%s: %u dimensions, at most %d", kind_name(request.kind), h->desc.ndim, rt::kMaxDims);
  for (int d = 0; d < rt::kMaxDims; ++d) {
    h->desc.sizes[d] = static_cast<int32_t>(get_u32(p + kTensorHeaderSizes + 4 * d));
    RT_CHECK(d < h->desc.ndim || h->desc.sizes[d] == 0, rt::Error::BadMessage,
             "%s: size %d beyond its %u dimensions is not 0", kind_name(request.kind), d,
             h->desc.ndim);
  }
  RT_CHECK(h->index < runner_.num_inputs(), rt::Error::InputMismatch,
           "input %u: the program takes %lu inputs", h->index, ul(runner_.num_inputs()));
  return runner_.check_input(h->index, h->desc);
}

void Server::input_taken(uint16_t index, uint32_t received, uint32_t nbytes, size_t* n) {
  input_received_[index] = received;
  input_set_[index] = received == nbytes;
  input_fresh_[index] = input_set_[index];
  outputs_ = Outputs::None;  // an output may share an input's memory (an identity program)
  uint8_t* out = tx_payload();
  memset(out, 0, kSetInputReplySize);
  put_u16(out + kSetInputReplyIndex, index);
  put_u32(out + kSetInputReplyReceived, received);
  *n = kSetInputReplySize;
}

rt::Error Server::on_set_input(const Frame& request, size_t* n) {
  InputHeader h;
  RT_TRY(take_input_header(request, &h));
  RT_CHECK(h.crc == 0, rt::Error::BadMessage, "SET_INPUT: the crc32 field is not 0");
  uint16_t index = h.index;
  uint32_t offset = h.offset;
  const uint8_t* p = request.payload;
  size_t size = request.length - kTensorHeaderSize;
  RT_CHECK(offset == 0 || offset == input_received_[index], rt::Error::BadMessage,
           "input %u: chunk at offset %lu, expected %lu (chunks come in order)", index,
           ul(offset), ul(input_received_[index]));
  RT_CHECK(size <= h.desc.nbytes - offset, rt::Error::BadMessage,
           "input %u: chunk of %lu bytes at offset %lu passes its %lu bytes", index, ul(size),
           ul(offset), ul(h.desc.nbytes));
  RT_TRY(runner_.write_input(index, offset, p + kTensorHeaderSize, size));
  if (stash_needed_ <= config_.input_stash.size && size > 0) {
    memcpy(config_.input_stash.data + stash_offset_[index] + offset, p + kTensorHeaderSize, size);
  }
  input_taken(index, offset + static_cast<uint32_t>(size), h.desc.nbytes, n);
  return rt::Error::Ok;
}

rt::Error Server::on_set_input_slot(const Frame& request, size_t* n) {
  const char* kind = kind_name(request.kind);
  bool from_file = request.kind == kSetInputFile;
  InputHeader h;
  RT_TRY(take_input_header(request, &h));
  char name[kMaxFileName + 1] = {};
  if (from_file) {
    RT_CHECK(request.length >= kTensorHeaderSize + kSetInputFileSize, rt::Error::BadMessage,
             "SET_INPUT_FILE payload is %lu bytes, at least %lu", ul(request.length),
             ul(kTensorHeaderSize + kSetInputFileSize));
    const uint8_t* tail = request.payload + kTensorHeaderSize;
    RT_CHECK(get_u16(tail + kSetInputFileReserved) == 0, rt::Error::BadMessage,
             "SET_INPUT_FILE: reserved bytes are not 0");
    RT_TRY(take_file_name(request, kTensorHeaderSize + kSetInputFileSize,
                          get_u16(tail + kSetInputFileNameLength), name));
  } else {
    RT_CHECK(request.length == kTensorHeaderSize, rt::Error::BadMessage,
             "SET_INPUT_SLOT payload is %lu bytes, expected its %lu-byte header alone",
             ul(request.length), ul(kTensorHeaderSize));
  }
  // The input lies where the stash keeps it between runs, so nothing is copied there.
  RT_CHECK(stash_needed_ <= config_.input_stash.size, rt::Error::OutOfMemory,
           "%s: the inputs need %lu bytes, the inputs slot has %lu", kind, ul(stash_needed_),
           ul(config_.input_stash.size));
  RT_CHECK(h.offset == stash_offset_[h.index], rt::Error::BadMessage,
           "%s: input %u at offset %lu of the inputs slot, the firmware keeps it at %lu", kind,
           h.index, ul(h.offset), ul(stash_offset_[h.index]));
  uint8_t* data = config_.input_stash.data + h.offset;  // in the slot: checked at load
  if (from_file) {
    // From here the slot's copy is not the input that was set (until this one is taken).
    input_taken(h.index, 0, h.desc.nbytes, n);
    int read = platform_host_read_file(name, data, h.desc.nbytes);
    RT_CHECK(read != -1, rt::Error::NotSupported,
             "SET_INPUT_FILE: this firmware has no semihosting (built with exit=park)");
    RT_CHECK(read == 0, rt::Error::InputMismatch,
             "SET_INPUT_FILE: the host's file '%s' %s %lu bytes (input %u)", name,
             read == -2 ? "would not open: no" : "does not hold exactly", ul(h.desc.nbytes),
             h.index);
  }
  uint32_t crc = runner::crc32(data, h.desc.nbytes);
  RT_CHECK(crc == h.crc, rt::Error::InputMismatch,
           "%s: input %u's %lu bytes at offset %lu of the inputs slot have CRC-32 %08lx, the "
           "host's is %08lx (not the input it %s)", kind, h.index, ul(h.desc.nbytes),
           ul(h.offset), ul(crc), ul(h.crc), from_file ? "wrote" : "preloaded");
  RT_TRY(runner_.write_input(h.index, 0, data, h.desc.nbytes));
  input_taken(h.index, h.desc.nbytes, h.desc.nbytes, n);
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
    profile_begin();  // each iteration's profile replaces the last one's
    err = runner_.execute(1, &one);
    profile_end(err == rt::Error::Ok);
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

rt::Error Server::on_get_output_file(const Frame& request, size_t* n) {
  RT_CHECK(request.length >= kGetOutputFileSize, rt::Error::BadMessage,
           "GET_OUTPUT_FILE payload is %lu bytes, at least %lu", ul(request.length),
           ul(kGetOutputFileSize));
  const uint8_t* p = request.payload;
  uint16_t index = get_u16(p + kGetOutputFileIndex);
  uint16_t flags = get_u16(p + kGetOutputFileFlags);
  size_t length = get_u16(p + kGetOutputFileNameLength);
  RT_CHECK(flags == 0 && get_u16(p + kGetOutputFileReserved) == 0, rt::Error::BadMessage,
           "GET_OUTPUT_FILE: flags and reserved must be 0");
  char name[kMaxFileName + 1];
  RT_TRY(take_file_name(request, kGetOutputFileSize, length, name));
  RT_CHECK(outputs_ == Outputs::Passed, rt::Error::BadMessage,
           "GET_OUTPUT_FILE: no RUN has passed since the program or an input was set");
  RT_CHECK(index < runner_.num_outputs(), rt::Error::BadMessage,
           "GET_OUTPUT_FILE: no output %u (the program has %lu)", index,
           ul(runner_.num_outputs()));
  const rt::Tensor* tensor = nullptr;
  RT_TRY(runner_.output_tensor(index, &tensor));
  const uint8_t* data = static_cast<const uint8_t*>(tensor->data);
  if (crc_index_ != index) {
    crc_value_ = runner::crc32(data, tensor->nbytes);
    crc_index_ = index;
  }
  int written = platform_host_write_file(name, data, tensor->nbytes);
  RT_CHECK(written != -1, rt::Error::NotSupported,
           "GET_OUTPUT_FILE: this firmware has no semihosting (built with exit=park)");
  RT_CHECK(written == 0, rt::Error::Internal,
           "GET_OUTPUT_FILE: the host %s the file '%s' (%lu bytes of output %u)",
           written == -2 ? "would not open" : "did not take every byte of", name,
           ul(tensor->nbytes), index);
  Writer w(tx_payload(), kMaxPayload);
  put_tensor_header(w, index, *tensor, 0, crc_value_);
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
  // The NPU's PMU cycle count since the LOAD, as the driver read it after each job: a real
  // NPU's, or the virtual U55's modelled one; 0 (and npu_counters 0) when no NPU job ran.
  uint64_t npu_cycles = ethosu::npu_cycles();
  put_u32(out + kStatsReplyNpuCounters, npu_cycles > 0 ? 1 : 0);
  put_u64(out + kStatsReplyNpuCycles, npu_cycles);
  *n = kStatsReplySize;
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

void Server::start_link_test(const Frame& request) {
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

}  // namespace hostlink
