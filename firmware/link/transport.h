// What the link server needs from the byte link: the board's console UART through
// platform.h, host_link's socket, or the unit tests' memory.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "platform.h"

namespace hostlink {

class Transport {
 public:
  virtual size_t read(uint8_t* data, size_t max) = 0;  // never blocks; 0: nothing waiting
  virtual void write(const uint8_t* data, size_t size) = 0;
  virtual bool wait() = 0;  // sleep until bytes may have come; false: they never will
  virtual void flush() = 0;  // until everything written has left
  // Reset the system (the board does not return). A transport that returns here has the
  // server start again as after a boot (host_link, tests).
  virtual void reset() = 0;
  virtual uint32_t rx_overflows() = 0;

 protected:
  ~Transport() = default;
};

// The platform hooks (platform.h): the board's UART, or the host's console/socket.
class PlatformTransport : public Transport {
 public:
  size_t read(uint8_t* data, size_t max) override { return platform_read(data, max); }
  void write(const uint8_t* data, size_t size) override { platform_write(data, size); }
  bool wait() override { return platform_wait() != 0; }
  void flush() override { platform_flush(); }
  void reset() override { platform_reset(); }
  uint32_t rx_overflows() override { return platform_rx_overflows(); }
};

}  // namespace hostlink
