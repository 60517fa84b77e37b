"""Building the firmware (`executor_runner`) and talking to it: boards, blobs, result records."""
