"""The virtual NPU: the host's Ethos-U55 (u55.py, behind the link: docs/link.md "Virtual U55")
and the executors of its jobs (executor.py)."""
