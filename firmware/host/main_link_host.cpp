// The link server on the host, over TCP: the same firmware/link/ code the board runs, for the
// host side's tests without an emulator.
//
//   host_link [--metadata-bytes N] [--planned-bytes N] [--program-slot-bytes N]
//             [--scratch-bytes N] [--npu-fault NAME] [--board NAME] [--npu-config NAME]
//             --listen 127.0.0.1:PORT
//
// --npu-fault runs the driver on a test variant of the NPU platform (ethosu/npu_fault.h).
// --board is the board name HELLO reports (default "host"): a stand-in for a board's FVP
// (tests/support/fvp_standin.py, for a board no QEMU runs) serves the link with it.
// --npu-config is the NPU configuration INFO reports (default ethos-u55-128), which the host
// builds its virtual NPU for; its product picks the driver's register layout at run time, as
// board.yaml npu.kind does at build time on a board: ethos-u55-* the U55's, ethos-u85-* the
// U85's (the Corstone-320 stand-in passes ethos-u85-<num_macs>).
//
// PORT 0 picks a free port. Prints "listening on 127.0.0.1:<port>" on stderr, accepts one
// connection, sends HELLO and serves until the peer closes; then exits 0. A RESET restarts
// the server (a new HELLO) as a board's reset would. The host may use the heap; the server
// it drives does not.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "backend.h"
#include "npu_absent.h"
#include "npu_fault.h"
#include "platform.h"
#include "platform_host.h"
#include "server.h"

namespace {

// A reset restarts the server (boot() again) instead of ending the process.
class HostTransport final : public hostlink::PlatformTransport {
 public:
  void reset() override { platform_flush(); }
};

uint8_t* allocate(size_t size) {
  return static_cast<uint8_t*>(aligned_alloc(16, (size + 16) & ~size_t{15}));
}

int usage() {
  fprintf(stderr,
          "usage: host_link [--metadata-bytes N] [--planned-bytes N] [--program-slot-bytes N] "
          "[--scratch-bytes N] [--npu-fault NAME] [--board NAME] [--npu-config NAME] "
          "--listen 127.0.0.1:PORT\n");
  return 2;
}

bool parse_size(const char* text, size_t* out) {
  char* end = nullptr;
  unsigned long long v = strtoull(text, &end, 0);
  if (end == text || *end != '\0' || v == 0 || v > 0xFFFFFFFFull) {
    return false;
  }
  *out = static_cast<size_t>(v);
  return true;
}

// The driver's register layout for an NPU configuration's name (false: neither product).
bool npu_kind_of(const char* config, ethosu::NpuKind* kind) {
  if (strncmp(config, "ethos-u55-", 10) == 0) {
    *kind = ethosu::NpuKind::EthosU55;
    return true;
  }
  if (strncmp(config, "ethos-u85-", 10) == 0) {
    *kind = ethosu::NpuKind::EthosU85;
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  size_t metadata_bytes = 4u << 20;
  size_t planned_bytes = 64u << 20;
  size_t scratch_bytes = 1u << 20;
  size_t slot_bytes = 32u << 20;
  size_t stash_bytes = 16u << 20;  // the inputs kept between runs, as the board's inputs slot
  const char* listen_at = nullptr;
  const char* board = "host";
  const char* npu_config = "ethos-u55-128";
  ethosu::NpuKind npu_kind = ethosu::NpuKind::EthosU55;
  ethosu::NpuFault fault = ethosu::NpuFault::None;
  for (int i = 1; i < argc; ++i) {
    bool has_value = i + 1 < argc;
    if (has_value && strcmp(argv[i], "--metadata-bytes") == 0) {
      if (!parse_size(argv[++i], &metadata_bytes)) return usage();
    } else if (has_value && strcmp(argv[i], "--planned-bytes") == 0) {
      if (!parse_size(argv[++i], &planned_bytes)) return usage();
    } else if (has_value && strcmp(argv[i], "--scratch-bytes") == 0) {
      if (!parse_size(argv[++i], &scratch_bytes)) return usage();
    } else if (has_value && strcmp(argv[i], "--program-slot-bytes") == 0) {
      if (!parse_size(argv[++i], &slot_bytes)) return usage();
    } else if (has_value && strcmp(argv[i], "--npu-fault") == 0) {
      fault = ethosu::npu_fault_named(argv[++i]);
      if (fault == ethosu::NpuFault::None) return usage();
    } else if (has_value && strcmp(argv[i], "--board") == 0) {
      board = argv[++i];
    } else if (has_value && strcmp(argv[i], "--npu-config") == 0) {
      npu_config = argv[++i];
      if (!npu_kind_of(npu_config, &npu_kind)) return usage();
    } else if (has_value && strcmp(argv[i], "--listen") == 0) {
      listen_at = argv[++i];
    } else {
      return usage();
    }
  }
  if (listen_at == nullptr) {
    return usage();
  }
  std::string address(listen_at);
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return usage();
  }
  std::string host = address.substr(0, colon);
  char* end = nullptr;
  long port = strtol(address.c_str() + colon + 1, &end, 10);
  sockaddr_in where = {};
  where.sin_family = AF_INET;
  if (*end != '\0' || port < 0 || port > 65535 || inet_pton(AF_INET, host.c_str(), &where.sin_addr) != 1) {
    return usage();
  }
  where.sin_port = htons(static_cast<uint16_t>(port));

  int listener = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&where), sizeof(where)) != 0 ||
      listen(listener, 1) != 0) {
    perror("host_link: listen");
    return 1;
  }
  socklen_t length = sizeof(where);
  getsockname(listener, reinterpret_cast<sockaddr*>(&where), &length);
  fprintf(stderr, "listening on %s:%u\n", host.c_str(), ntohs(where.sin_port));
  fflush(stderr);
  int peer = accept(listener, nullptr, nullptr);
  close(listener);
  if (peer < 0) {
    perror("host_link: accept");
    return 1;
  }
  setsockopt(peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // small frames, stop and wait
  host_platform_use_fd(peer);

  static HostTransport transport;
  hostlink::ServerConfig config = {
      {{allocate(metadata_bytes), metadata_bytes},
       {allocate(planned_bytes), planned_bytes},
       {allocate(scratch_bytes), scratch_bytes}},
      {allocate(slot_bytes), slot_bytes},
      {allocate(stash_bytes), stash_bytes},
      {nullptr, 0},
      "host",
      board,
      npu_config,  // absent (ID and CONFIG 0): the link's virtual NPU stands in for it
      0,
      0,
  };
  // The server holds its frame buffers: static, as on the board.
  static hostlink::Server server(transport, config);
  platform_init();
  // As on QEMU in link mode: no NPU, so the driver (with --npu-config's register layout) runs
  // on the link's virtual NPU (the host's model answers its registers); its interrupt handler
  // is called at once, as a pended IRQ's.
  ethosu::NpuPlatform npu =
      server.virtual_u55_platform(test::absent_npu_platform(npu_kind), ethosu::handle_npu_irq);
  if (fault != ethosu::NpuFault::None) {
    npu = ethosu::faulty_platform(npu, fault);
  }
  if (ethosu::register_backend(npu) != rt::Error::Ok) {
    fprintf(stderr, "host_link: %s\n", rt::last_error_reason());
    return 1;
  }
  server.boot();
  server.serve();
  close(peer);
  return 0;
}
