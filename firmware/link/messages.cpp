// Message helpers the link server's files share (see messages.h).
#include "messages.h"

namespace hostlink {

using rt::ul;

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
    case kSetInputSlot: return "SET_INPUT_SLOT";
    case kSetInputFile: return "SET_INPUT_FILE";
    case kRun: return "RUN";
    case kGetOutput: return "GET_OUTPUT";
    case kGetOutputFile: return "GET_OUTPUT_FILE";
    case kStats: return "STATS";
    case kReset: return "RESET";
    case kLinkTest: return "LINK_TEST";
    case kProfile: return "PROFILE";
    case kNpuRegs: return "NPU_REGS";
    case kNpuRead: return "NPU_READ";
    case kNpuWrite: return "NPU_WRITE";
    case kNpuDone: return "NPU_DONE";
    case kNpuHash: return "NPU_HASH";
    case kNpuWriteFile: return "NPU_WRITE_FILE";
    case kNak: return "NAK";
    case kError: return "ERROR";
    default: return "unknown";
  }
}

rt::Error expect_size(const Frame& request, size_t size) {
  RT_CHECK(request.length == size, rt::Error::BadMessage, "%s payload is %lu bytes, expected %lu",
           kind_name(request.kind), ul(request.length), ul(size));
  return rt::Error::Ok;
}

rt::Error take_file_name(const Frame& request, size_t at, size_t length,
                         char (&name)[kMaxFileName + 1]) {
  RT_CHECK(length >= 1 && length <= kMaxFileName && request.length == at + length,
           rt::Error::BadMessage, "%s: a %lu-byte name in a %lu-byte payload (names are 1..%lu bytes)",
           kind_name(request.kind), ul(length), ul(request.length), ul(kMaxFileName));
  for (size_t i = 0; i < length; ++i) {
    char c = static_cast<char>(request.payload[at + i]);
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || (c == '.' && i > 0);
    RT_CHECK(ok, rt::Error::BadMessage,
             "%s: the name's byte %lu (0x%02x) is not one of [A-Za-z0-9._-] (no '.' first)",
             kind_name(request.kind), ul(i), static_cast<unsigned>(request.payload[at + i]));
    name[i] = c;
  }
  name[length] = '\0';
  return rt::Error::Ok;
}

}  // namespace hostlink
