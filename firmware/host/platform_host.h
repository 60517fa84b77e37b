// Host-only platform control (not part of platform.h): where the console goes.
#pragma once

// From now on platform_write/read/wait use file descriptor `fd` (host_link's socket) instead
// of stdout / nothing. -1 goes back to stdout.
void host_platform_use_fd(int fd);
