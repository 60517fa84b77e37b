// Host-only platform control (not part of platform.h): where the console goes.
#pragma once

// From now on platform_write/read/wait use file descriptor `fd` (host_link's socket) instead
// of stdout / nothing. -1 goes back to stdout.
void host_platform_use_fd(int fd);

// From now on platform_host_write_file writes into the folder `dir` (host_link --files DIR);
// nullptr (the default): it writes nothing and returns -1, as a board without semihosting.
void host_platform_file_dir(const char* dir);
