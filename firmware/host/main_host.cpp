// executor_runner on the host: `host_runner [options] PROGRAM INPUTS`.
//
// PROGRAM is a .pte or an SDKP blob, INPUTS an SDKI blob (sdk.firmware.image
// writes both). Prints the same `@sdk` record as the firmware and exits with
// the same code. The host may use the heap; the runtime it drives does not.
// --outputs-on-error also prints the outputs of a failed execute() (see RunOptions).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "npu_absent.h"
#include "platform.h"
#include "runner.h"

namespace {

struct File {
  uint8_t* data = nullptr;
  size_t size = 0;
};

// The whole file in 16-byte aligned memory (the runtime reads the program in place).
bool read_file(const char* path, File* out) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) {
    return false;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (size < 0) {
    fclose(f);
    return false;
  }
  out->size = static_cast<size_t>(size);
  out->data = static_cast<uint8_t*>(aligned_alloc(16, (out->size + 16) & ~size_t{15}));
  bool ok = out->data != nullptr && fread(out->data, 1, out->size, f) == out->size;
  fclose(f);
  return ok;
}

rt::Span allocate(size_t size) {
  return rt::Span{static_cast<uint8_t*>(aligned_alloc(16, (size + 16) & ~size_t{15})), size};
}

int usage() {
  fprintf(stderr,
          "usage: host_runner [--metadata-bytes N] [--planned-bytes N] [--scratch-bytes N] "
          "[--outputs-on-error] PROGRAM INPUTS\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  size_t metadata_bytes = 4u << 20;
  size_t planned_bytes = 256u << 20;
  size_t scratch_bytes = 1u << 20;
  const char* paths[2] = {nullptr, nullptr};
  int num_paths = 0;
  runner::RunOptions options;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--outputs-on-error") == 0) {
      options.outputs_on_error = true;
    } else if (i + 1 < argc && strcmp(argv[i], "--metadata-bytes") == 0) {
      metadata_bytes = strtoul(argv[++i], nullptr, 0);
    } else if (i + 1 < argc && strcmp(argv[i], "--planned-bytes") == 0) {
      planned_bytes = strtoul(argv[++i], nullptr, 0);
    } else if (i + 1 < argc && strcmp(argv[i], "--scratch-bytes") == 0) {
      scratch_bytes = strtoul(argv[++i], nullptr, 0);
    } else if (num_paths < 2 && argv[i][0] != '-') {
      paths[num_paths++] = argv[i];
    } else {
      return usage();
    }
  }
  if (num_paths != 2) {
    return usage();
  }
  platform_init();
  runner::begin("host");
  // As on QEMU: the backend is there, the NPU is not (a delegated program: NoHardware).
  rt::Error npu_err = ethosu::register_backend(test::absent_npu_platform());
  if (npu_err != rt::Error::Ok) {
    platform_exit(runner::report_error(npu_err));
  }
  File program_file;
  File inputs_file;
  if (!read_file(paths[0], &program_file)) {
    rt::fail(rt::Error::InvalidArgument, "cannot read program file %s", paths[0]);
    platform_exit(runner::report_error(rt::Error::InvalidArgument));
  }
  if (!read_file(paths[1], &inputs_file)) {
    rt::fail(rt::Error::InvalidArgument, "cannot read inputs file %s", paths[1]);
    platform_exit(runner::report_error(rt::Error::InvalidArgument));
  }
  rt::ConstBytes program = {program_file.data, program_file.size};
  if (program_file.size >= 4 && memcmp(program_file.data, "SDKP", 4) == 0) {
    rt::Error err = runner::open_blob(program_file.data, program_file.size, runner::kProgramMagic,
                                      rt::Error::InvalidProgram, &program);
    if (err != rt::Error::Ok) {
      platform_exit(runner::report_error(err));
    }
  }
  rt::ConstBytes inputs;
  rt::Error err = runner::open_blob(inputs_file.data, inputs_file.size, runner::kInputsMagic,
                                    rt::Error::InvalidInputs, &inputs);
  if (err != rt::Error::Ok) {
    platform_exit(runner::report_error(err));
  }
  runner::RunnerMemory memory = {allocate(metadata_bytes), allocate(planned_bytes),
                                 allocate(scratch_bytes)};
  int code = runner::run(program, inputs, memory, options);
  platform_exit(code);
}
