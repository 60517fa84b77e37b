// The firmware side of the host link (docs/link.md): frames in, one response per request
// out, the program in the board's program slot, inputs straight into the method's tensors.
// Board-independent: bytes go through a Transport, time through platform.h. One class, its
// members defined by concern: server.cpp (boot, a request's way through), transport.cpp (the
// byte pump, frames, retransmissions), requests.cpp (the request handlers), npu_service.cpp
// (the virtual U55's exchanges), profile.cpp (the step observer, PROFILE); messages.h holds
// what they share (kind names, payload size checks, the payload writer).
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


// Inputs whose progress the server tracks; a program with more is refused at load.
constexpr size_t kMaxInputs = 64;
// The virtual Ethos-U55 (docs/link.md "Virtual U55"): the driver's register writes wait in a
// batch of at most kMaxNpuWrites; a read, the wait for the interrupt or a full batch sends them
// (NPU_REGS, with the read's offset or kNpuNoRead) and waits for the host's NPU_DONE. NPU_REGS
// again after kNpuAnnounceSeconds without a request from the host; after kNpuTimeoutSeconds
// the exchange fails.
constexpr size_t kMaxNpuWrites = 32;
constexpr size_t kNpuRegsMaxSize = kNpuRegsSize + kNpuWriteEntrySize * kMaxNpuWrites;
constexpr uint32_t kNpuAnnounceSeconds = 1;
constexpr uint32_t kNpuTimeoutSeconds = 60;

struct ServerConfig {
  runner::RunnerMemory memory;
  rt::Span program_slot;              // LOAD_* write the program here; LOAD_SLOT reads an SDKP
  // A copy of every input, put back before each execute() but the first after SET_INPUT: the
  // memory plan may reuse an input's memory for later tensors, so a second run would read
  // garbage (the board's inputs slot; SET_INPUT_SLOT takes an input preloaded there). Empty: RUN
  // needs fresh inputs.
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

  // The platform of a virtual Ethos-U55 for a board whose NPU is absent: `board`'s, with the
  // register reads and writes and the interrupt wait going over the link to the host's model
  // of the U55 (the unchanged driver runs). `raise_irq` makes the board take the NPU's
  // interrupt (pends it: the real handler runs, and calls ethosu::handle_npu_irq()); it is
  // called when the host's answer shows the NPU's IRQ line rising.
  ethosu::NpuPlatform virtual_u55_platform(const ethosu::NpuPlatform& board,
                                           void (*raise_irq)(void));

  // Time for the virtual U55's timeouts and virtual_npu_ticks, in platform_tick_hz() units
  // (default platform_ticks; tests inject a clock that moves when the transport waits).
  void set_clock(uint64_t (*ticks)(void)) { clock_ = ticks; }

  // For tests: what the server holds.
  uint32_t session() const { return session_id_; }
  bool program_loaded() const { return runner_.loaded(); }
  uint32_t runs() const { return stats_runs_; }
  bool npu_exchange_open() const { return exchange_open_; }
  uint32_t npu_exchanges() const { return exchanges_total_; }

 private:
  enum class LoadState : uint8_t { Idle, Receiving };

  // server.cpp: one request's way through the server.
  // A request, one at a time: answered again when retransmitted, served (its ticks into the
  // STATS figures), answered, then RESET or LINK_TEST's part after the answer.
  void handle(const Frame& request);
  // Handlers build the payload at tx_payload() and return its size (or an error).
  rt::Error dispatch(const Frame& request, size_t* payload_size);
  // BadMessage: the request's session is not the firmware's.
  rt::Error wrong_session(const Frame& request) const;

  // transport.cpp: the byte pump, frames in and out, the kept answer.
  // Bytes in arrival order: the rest of the chunk receive() was given, then what the job loop
  // read from the transport itself (a job ends anywhere in a chunk; the rest is handled after).
  bool take_byte(uint8_t* byte);
  // The job loop's read: what the transport has goes where take_byte finds it; false: nothing.
  bool read_chunk();
  void process_byte(uint8_t byte);
  void handle_body(const uint8_t* body, size_t size);
  // A retransmission of the last request answered (its kept answer, without doing the work
  // again) or of the NPU_DONE that ended the last exchange (its empty answer again): true
  // when it was one and is answered.
  bool answer_again(const Frame& request);
  // The response to `request` (or an ERROR when err is not Ok), kept for its retransmission.
  void answer(const Frame& request, rt::Error err, size_t payload_size);
  uint8_t* tx_payload() { return tx_body_ + kHeaderSize; }
  // Build, encode and send a response; `keep` makes it the retransmission copy.
  void send(uint8_t kind, uint16_t seq, size_t payload_size, bool keep);
  void send_nak(NakReason why);
  // A frame outside the kept slot (an NPU_DONE answered again): payload <= 64 bytes.
  static constexpr size_t kSmallPayload = 64;
  void send_small(uint8_t kind, uint16_t seq, uint8_t flags, const uint8_t* payload, size_t size);
  void send_error(rt::Error err, uint8_t request_kind, uint16_t seq);

  // requests.cpp: the request handlers and the program, inputs and outputs they keep.
  rt::Error on_connect(const Frame& request, size_t* n);
  rt::Error on_load_begin(const Frame& request, size_t* n);
  rt::Error on_load_data(const Frame& request, size_t* n);
  rt::Error on_load_end(const Frame& request, size_t* n);
  rt::Error on_load_slot(const Frame& request, size_t* n);
  // SET_INPUT's and SET_INPUT_SLOT's tensor header, checked against the program's input.
  struct InputHeader {
    uint16_t index = 0;
    runner::TensorDesc desc = {};
    uint32_t offset = 0;  // SET_INPUT: of the chunk; SET_INPUT_SLOT: in the inputs slot
    uint32_t crc = 0;     // SET_INPUT: 0; SET_INPUT_SLOT: the host's CRC-32 of the input
  };
  rt::Error take_input_header(const Frame& request, InputHeader* header);
  // `received` of input `index`'s `nbytes` are in; the reply into the tx payload.
  void input_taken(uint16_t index, uint32_t received, uint32_t nbytes, size_t* n);
  rt::Error on_set_input(const Frame& request, size_t* n);
  // SET_INPUT_SLOT, and SET_INPUT_FILE (the same after reading the file into the slot).
  rt::Error on_set_input_slot(const Frame& request, size_t* n);
  rt::Error on_run(const Frame& request, size_t* n);
  rt::Error on_get_output(const Frame& request, size_t* n);
  rt::Error on_get_output_file(const Frame& request, size_t* n);
  rt::Error on_stats(size_t* n);
  rt::Error on_link_test(const Frame& request, size_t* n);
  // After LINK_TEST's first answer: the source's bytes, or the sink's count to swallow.
  void start_link_test(const Frame& request);
  void link_test_done();
  size_t link_test_reply(uint64_t ticks);  // into the tx payload; returns its size
  size_t info_payload();
  size_t loaded_payload();
  rt::Error load_program(rt::ConstBytes program, const uint8_t sha[kSha256Size]);
  void forget_program();
  rt::Error restore_inputs();

  // npu_service.cpp: the virtual Ethos-U55.
  // The virtual U55's platform hooks (ctx: the server).
  static uint32_t u55_read32(void* ctx, uint32_t offset);
  static void u55_write32(void* ctx, uint32_t offset, uint32_t value);
  static bool u55_wait_for_irq(void* ctx, const volatile bool* irq_done, uint32_t timeout_us);
  // Send the batched writes and a read (kNpuNoRead: none) and serve the host until its
  // NPU_DONE: the nested serve loop of one exchange. Returns the value read (0 on failure,
  // which is remembered in npu_failure_ and reported with the request's error).
  uint32_t npu_exchange(uint32_t read_offset);
  void send_npu_regs();
  // A request while an exchange is open: only NPU_READ/WRITE/HASH/DONE (the retransmitted
  // request being served makes the firmware send NPU_REGS again).
  void handle_in_exchange(const Frame& request);
  rt::Error on_npu_read(const Frame& request, size_t* n);
  rt::Error on_npu_write(const Frame& request, size_t* n);
  rt::Error on_npu_write_file(const Frame& request, size_t* n);
  rt::Error on_npu_hash(const Frame& request, size_t* n);
  rt::Error on_npu_done(const Frame& request, size_t* n);
  // [address, address + length) inside memory the firmware lets the NPU reach (its arenas and
  // program slot; the embedded program read-only): the bytes, else nullptr (a bus error).
  uint8_t* npu_memory(uint64_t address, uint64_t length, bool write) const;

  // profile.cpp: the step observer and PROFILE.
  // Around each RUN iteration's execute(): a fresh profile, then its totals and whether it
  // stands (the iteration passed and ran an instruction).
  void profile_begin();
  void profile_end(bool passed);
  // The step observer: one event per instruction of the run being profiled.
  static void profile_step(void* ctx, size_t pc);
  rt::Error on_profile(const Frame& request, size_t* n);

  Transport& transport_;
  ServerConfig config_;
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

  uint32_t input_received_[kMaxInputs] = {};
  size_t stash_offset_[kMaxInputs] = {};
  size_t stash_needed_ = 0;     // bytes of the stash this program's inputs take
  bool input_fresh_[kMaxInputs] = {};  // the tensor holds the input as set (no execute() since)
  bool input_set_[kMaxInputs] = {};
  // What GET_OUTPUT may read: nothing, a passed RUN's outputs, or what a failed RUN left in
  // them (only when asked with kGetOutputAfterFailure: tests check what a refusing kernel wrote).
  enum class Outputs : uint8_t { None, Passed, Failed };
  Outputs outputs_ = Outputs::None;
  size_t crc_index_ = SIZE_MAX;  // the output whose CRC crc_value_ holds
  uint32_t crc_value_ = 0;

  // The profile of the last RUN's last iteration (PROFILE reads it).
  struct ProfileEvent {
    uint32_t pc;
    uint32_t start;     // ticks from profile_start_
    uint32_t npu_wait;  // serving_npu_ticks_ at the start, from profile_npu_start_
  };
  ProfileEvent profile_[kMaxProfileEvents] = {};
  uint32_t profile_count_ = 0;
  uint32_t profile_dropped_ = 0;
  uint64_t profile_start_ = 0;
  uint64_t profile_npu_start_ = 0;
  uint32_t profile_run_ticks_ = 0;
  uint32_t profile_npu_wait_ = 0;
  bool profile_valid_ = false;

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

  // The request being served: the virtual U55's exchanges carry its seq (they happen inside
  // it: a LOAD's backend init, a RUN's delegates).
  bool serving_ = false;
  uint8_t serving_kind_ = 0;
  uint16_t serving_seq_ = 0;
  uint16_t serving_exchanges_ = 0;  // exchanges in this request, numbered from 0
  uint64_t serving_npu_ticks_ = 0;  // ticks inside exchanges in this request
  // The virtual U55: its platform's interrupt hook, the batched writes, the open exchange.
  void (*raise_irq_)(void) = nullptr;
  struct NpuWrite {
    uint32_t offset;
    uint32_t value;
  };
  NpuWrite npu_writes_[kMaxNpuWrites] = {};
  size_t npu_write_count_ = 0;
  uint32_t npu_read_offset_ = kNpuNoRead;
  // NPU_REGS as sent (sent again as it is when the host is quiet).
  uint8_t regs_wire_[cobs_max_encoded(kMinBody + kNpuRegsMaxSize) + 2];
  size_t regs_wire_size_ = 0;
  bool irq_line_ = false;           // the NPU's IRQ line as the host last said
  bool exchange_open_ = false;
  bool exchange_done_ = false;
  bool exchange_request_seen_ = false;  // a request arrived since the last look (the timeouts)
  uint32_t exchange_value_ = 0;
  bool exchange_irq_ = false;
  uint32_t exchanges_total_ = 0;
  // Why an exchange of this request failed (then the rest fail at once and the request's
  // error says it); empty: none did.
  char npu_failure_[120] = {};
  // The last NPU_DONE taken: its retransmission after the exchange (and maybe the request)
  // ended is answered again (its response is empty), not refused.
  bool done_valid_ = false;
  uint16_t done_seq_ = 0;
  uint32_t done_session_ = 0;
};

}  // namespace hostlink
