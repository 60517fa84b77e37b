// The host-link server (see server.h, docs/link.md): boot and one request's way through the
// server. The Server's other members are defined by concern:
//   transport.cpp    the byte pump, frames in and out, NAK, ERROR, the kept answer and
//                    retransmissions
//   requests.cpp     the request handlers (CONNECT, INFO, LOAD_*, SET_INPUT, RUN, GET_OUTPUT,
//                    STATS, LINK_TEST) and the program and inputs they keep
//   npu_service.cpp  the virtual Ethos-U55: the driver's platform hooks and their exchanges
//                    with the host (NPU_REGS, NPU_READ/WRITE/HASH/DONE)
//   profile.cpp      the step observer's events and PROFILE
#include "server.h"

#include "messages.h"
#include "platform.h"

namespace hostlink {

using rt::ul;

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

void Server::handle(const Frame& request) {
  if (exchange_open_) {
    handle_in_exchange(request);
    return;
  }
  if (answer_again(request)) {
    return;
  }
  rt::clear_error();
  rt::Error err = rt::Error::Ok;
  size_t n = 0;
  if (request.kind != kConnect && request.session != session_id_) {
    err = wrong_session(request);
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
    } else if (request.kind == kSetInput || request.kind == kSetInputSlot ||
               request.kind == kSetInputFile) {
      stats_input_ticks_ += ticks;
    } else if (request.kind == kGetOutput || request.kind == kGetOutputFile) {
      stats_output_ticks_ += ticks;
    }
  }
  answer(request, err, n);
  if (err != rt::Error::Ok) {
    return;
  }
  if (request.kind == kReset) {
    reset_pending_ = true;
  } else if (request.kind == kLinkTest) {
    start_link_test(request);
  }
}

rt::Error Server::wrong_session(const Frame& request) const {
  return rt::fail(rt::Error::BadMessage, "%s for session 0x%08lx, the firmware's is 0x%08lx",
                  kind_name(request.kind), ul(request.session), ul(session_id_));
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
    case kSetInputSlot:
    case kSetInputFile:
      return on_set_input_slot(request, n);
    case kRun:
      return on_run(request, n);
    case kGetOutput:
      return on_get_output(request, n);
    case kGetOutputFile:
      return on_get_output_file(request, n);
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
    case kNpuWriteFile:
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

}  // namespace hostlink
