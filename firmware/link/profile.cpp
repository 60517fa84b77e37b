// Profiling (docs/link.md "PROFILE"): the runtime's step observer records one event per
// instruction of each RUN iteration; the last iteration's events are what PROFILE reads.
#include "messages.h"
#include "platform.h"
#include "server.h"

namespace hostlink {

using rt::ul;

void Server::profile_begin() {
  profile_count_ = 0;
  profile_dropped_ = 0;
}

void Server::profile_end(bool passed) {
  profile_run_ticks_ = static_cast<uint32_t>(clock_() - profile_start_);
  profile_npu_wait_ = static_cast<uint32_t>(serving_npu_ticks_ - profile_npu_start_);
  profile_valid_ = passed && profile_count_ > 0;
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

}  // namespace hostlink
