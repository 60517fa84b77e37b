// The firmware side of the host link (docs/link.md): frames in, one response per request
// out, the program in the board's program slot, inputs straight into the method's tensors.
// Board-independent: bytes go through a Transport, time through platform.h.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "frame.h"
#include "rt/arena.h"
#include "rt/error.h"
#include "session.h"
#include "sha256.h"
#include "transport.h"

namespace hostlink {

enum Kind : uint8_t {
  kHello = 0x01,
  kConnect = 0x02,
  kInfo = 0x03,
  kLoadBegin = 0x10,
  kLoadData = 0x11,
  kLoadEnd = 0x12,
  kLoadSlot = 0x13,
  kSetInput = 0x20,
  kRun = 0x30,
  kGetOutput = 0x31,
  kStats = 0x40,
  kReset = 0x50,
  kLinkTest = 0x60,
  kNpuJob = 0x70,
  kNpuRead = 0x71,
  kNpuWrite = 0x72,
  kNpuDone = 0x73,
  kNak = 0x7E,
  kError = 0x7F,
};

constexpr size_t kTensorHeaderSize = 48;
// Inputs whose progress the server tracks; a program with more is refused at load.
constexpr size_t kMaxInputs = 64;
constexpr size_t kNpuJobPayloadSize = 2 + 2 + 4 + kSha256Size;
// A virtual NPU job (docs/link.md): NPU_JOB again after this long without a request from the
// host, and the delegate fails after this long.
constexpr uint32_t kNpuJobAnnounceSeconds = 1;
constexpr uint32_t kNpuJobTimeoutSeconds = 60;

struct ServerConfig {
  runner::RunnerMemory memory;
  rt::Span program_slot;              // LOAD_* write the program here; LOAD_SLOT reads an SDKP
  // A copy of every input, put back before each execute() but the first after SET_INPUT: the
  // memory plan may reuse an input's memory for later tensors, so a second run would read
  // garbage (the board's inputs slot, unused in link mode). Empty: RUN needs fresh inputs.
  rt::Span input_stash;
  rt::ConstBytes embedded_program;    // loaded at boot when size > 0
  const char* firmware_version;
  const char* board;
  const char* npu_config;
  uint32_t npu_id;                    // the NPU's ID register (0: no NPU)
  uint32_t npu_config_register;       // its CONFIG register
};

class Server {
 public:
  Server(Transport& transport, const ServerConfig& config);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // As after a reset: forget everything, load the embedded program, send HELLO.
  void boot();
  // Bytes from the link, any split: frames are handled as they complete.
  void receive(const uint8_t* data, size_t size);
  // Read and handle until the transport says nothing can come any more.
  void serve();

  // The Ethos-U backend's provider when the NPU is absent: jobs become NPU_JOB exchanges with
  // the host during a RUN. Install it (ethosu::set_virtual_npu) before boot().
  ethosu::VirtualNpu& virtual_npu() { return virtual_npu_; }

  // Time for the virtual NPU's timeouts and virtual_npu_ticks, in platform_tick_hz() units
  // (default platform_ticks; tests inject a clock that moves when the transport waits).
  void set_clock(uint64_t (*ticks)(void)) { clock_ = ticks; }

  // For tests: what the server holds.
  uint32_t session() const { return session_id_; }
  bool program_loaded() const { return runner_.loaded(); }
  uint32_t runs() const { return stats_runs_; }
  bool npu_job_open() const { return job_open_; }

 private:
  enum class LoadState : uint8_t { Idle, Receiving };

  class VirtualNpuPort final : public ethosu::VirtualNpu {
   public:
    explicit VirtualNpuPort(Server& server) : server_(server) {}
    bool available() override { return true; }  // the link is served whenever we exist
    rt::Error run(const ethosu::VirtualJob& job, uint8_t* scratch, size_t size) override {
      return server_.run_npu_job(job, scratch, size);
    }

   private:
    Server& server_;
  };

  // Bytes in arrival order: the rest of the chunk receive() was given, then what the job loop
  // read from the transport itself (a job ends anywhere in a chunk; the rest is handled after).
  bool take_byte(uint8_t* byte);
  void process_byte(uint8_t byte);
  // The nested serve loop of one virtual NPU job.
  rt::Error run_npu_job(const ethosu::VirtualJob& job, uint8_t* scratch, size_t scratch_size);
  void send_npu_job();
  // A request while a job is open: only NPU_READ/WRITE/DONE (a retransmitted RUN re-announces).
  void handle_in_job(const Frame& request);
  rt::Error on_npu_read(const Frame& request, size_t* n);
  rt::Error on_npu_write(const Frame& request, size_t* n);
  rt::Error on_npu_done(const Frame& request, size_t* n);

  void handle_body(const uint8_t* body, size_t size);
  void handle(const Frame& request);
  // Handlers build the payload at tx_payload() and return its size (or an error).
  rt::Error dispatch(const Frame& request, size_t* payload_size);
  rt::Error on_connect(const Frame& request, size_t* n);
  rt::Error on_load_begin(const Frame& request, size_t* n);
  rt::Error on_load_data(const Frame& request, size_t* n);
  rt::Error on_load_end(const Frame& request, size_t* n);
  rt::Error on_load_slot(const Frame& request, size_t* n);
  rt::Error on_set_input(const Frame& request, size_t* n);
  rt::Error on_run(const Frame& request, size_t* n);
  rt::Error on_get_output(const Frame& request, size_t* n);
  rt::Error on_stats(size_t* n);
  rt::Error on_link_test(const Frame& request, size_t* n);

  size_t info_payload();
  size_t loaded_payload();
  rt::Error load_program(rt::ConstBytes program, const uint8_t sha[kSha256Size]);
  void forget_program();
  uint8_t* tx_payload() { return tx_body_ + kHeaderSize; }
  // Build, encode and send a response; `keep` makes it the retransmission copy.
  void send(uint8_t kind, uint16_t seq, size_t payload_size, bool keep);
  void send_nak(NakReason why);
  // A frame outside the kept slot (NPU_JOB, an NPU_DONE answered again): payload <= 64 bytes.
  static constexpr size_t kSmallPayload = 64;
  void send_small(uint8_t kind, uint16_t seq, uint8_t flags, const uint8_t* payload, size_t size);
  void send_error(rt::Error err, uint8_t request_kind, uint16_t seq);
  void link_test_done();

  Transport& transport_;
  ServerConfig config_;
  VirtualNpuPort virtual_npu_{*this};
  uint64_t (*clock_)(void) = platform_ticks;
  runner::Session runner_;
  Deframer deframer_;

  uint32_t session_id_ = 0;
  // The last response, encoded, and the request it answered.
  bool kept_valid_ = false;
  uint8_t kept_kind_ = 0;
  uint16_t kept_seq_ = 0;
  uint32_t kept_session_ = 0;
  size_t kept_size_ = 0;
  uint8_t kept_wire_[kMaxWire];
  uint8_t tx_body_[kMaxBody];

  LoadState load_state_ = LoadState::Idle;
  uint32_t load_size_ = 0;
  uint32_t load_received_ = 0;
  uint8_t load_sha_[kSha256Size] = {};
  Sha256 load_hash_;
  uint8_t program_sha_[kSha256Size] = {};

  rt::Error restore_inputs();

  uint32_t input_received_[kMaxInputs] = {};
  size_t stash_offset_[kMaxInputs] = {};
  size_t stash_needed_ = 0;     // bytes of the stash this program's inputs take
  bool input_fresh_[kMaxInputs] = {};  // the tensor holds the input as set (no execute() since)
  bool input_set_[kMaxInputs] = {};
  bool outputs_valid_ = false;
  size_t crc_index_ = SIZE_MAX;  // the output whose CRC crc_value_ holds
  uint32_t crc_value_ = 0;

  uint32_t stats_runs_ = 0;
  uint64_t stats_load_ticks_ = 0;
  uint64_t stats_input_ticks_ = 0;
  uint64_t stats_run_ticks_ = 0;
  uint64_t stats_last_run_ticks_ = 0;
  uint64_t stats_output_ticks_ = 0;

  // LINK_TEST sink: raw bytes still to swallow; its request and start time.
  uint32_t sink_remaining_ = 0;
  uint32_t link_test_count_ = 0;
  uint16_t link_test_seq_ = 0;
  uint64_t link_test_start_ = 0;
  bool reset_pending_ = false;

  // receive()'s chunk, and the job loop's own reads.
  const uint8_t* rx_data_ = nullptr;
  size_t rx_size_ = 0;
  size_t rx_pos_ = 0;
  uint8_t rx_chunk_[256];
  size_t rx_chunk_size_ = 0;
  size_t rx_chunk_pos_ = 0;

  // The RUN being served (its jobs carry its seq) and the virtual NPU job open in it.
  bool run_active_ = false;
  uint16_t run_seq_ = 0;
  uint16_t run_jobs_ = 0;          // jobs announced in this RUN
  uint64_t run_npu_ticks_ = 0;     // ticks inside run_npu_job in this RUN
  bool job_open_ = false;
  bool job_done_ = false;
  bool job_failed_ = false;
  bool job_request_seen_ = false;  // a request arrived since the last look (the timeouts)
  uint16_t job_number_ = 0;
  uint32_t job_delegate_ = 0;
  const uint8_t* job_sha_ = nullptr;
  uint8_t* job_scratch_ = nullptr;
  size_t job_scratch_size_ = 0;
  char job_reason_[160] = {};
  // The last NPU_DONE taken: its retransmission after the job (and maybe the RUN) ended is
  // answered again (its response is empty), not refused.
  bool done_valid_ = false;
  uint16_t done_seq_ = 0;
  uint32_t done_session_ = 0;
};

}  // namespace hostlink
