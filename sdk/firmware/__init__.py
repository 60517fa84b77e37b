"""Building the firmware (`executor_runner`): boards, the build, the program blob, memory."""
