// The server's side of the byte link (docs/link.md "Frames", "Reliability"): the byte pump,
// frames in (deframing, header checks, NAK), responses out (encoded, the last one kept) and
// the answer to a retransmitted request.
#include <string.h>

#include "messages.h"
#include "server.h"

namespace hostlink {

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

bool Server::read_chunk() {
  size_t got = transport_.read(rx_chunk_, sizeof(rx_chunk_));
  if (got == 0) {
    return false;
  }
  rx_chunk_size_ = got;
  rx_chunk_pos_ = 0;
  return true;
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

bool Server::answer_again(const Frame& request) {
  // A retransmission: the kept answer, without doing the work again.
  if (kept_valid_ && request.seq == kept_seq_ && request.kind == kept_kind_ &&
      request.session == kept_session_) {
    transport_.write(kept_wire_, kept_size_);
    return true;
  }
  // The host lost the answer to the NPU_DONE that ended an exchange; the request went on (and
  // may have been answered since, which took the kept slot). The answer is empty: again. Inside
  // a later exchange it is never that exchange's end.
  if (done_valid_ && request.kind == kNpuDone && request.seq == done_seq_ &&
      request.session == done_session_) {
    send_small(kNpuDone, request.seq, kFlagResponse, nullptr, 0);
    return true;
  }
  return false;
}

void Server::answer(const Frame& request, rt::Error err, size_t payload_size) {
  kept_kind_ = request.kind;
  kept_seq_ = request.seq;
  kept_session_ = request.session;
  if (err != rt::Error::Ok) {
    send_error(err, request.kind, request.seq);
    return;
  }
  send(request.kind, request.seq, payload_size, true);
}

void Server::send(uint8_t kind, uint16_t seq, size_t payload_size, bool keep) {
  size_t body = build_body(kind, seq, session_id_, kFlagResponse, tx_payload(), payload_size,
                           tx_body_, sizeof(tx_body_));
  size_t wire = encode_wire(tx_body_, body, kept_wire_, sizeof(kept_wire_));
  kept_size_ = wire;
  kept_valid_ = keep;  // kept_kind_/seq_/session_ name the request: set by the caller
  transport_.write(kept_wire_, wire);
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
