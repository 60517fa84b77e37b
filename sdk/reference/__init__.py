"""The host reference's NPU executors: a delegate run on the host, as its saved TOSA on the TOSA
reference model (executor.TosaExecutor) or as its Vela command stream on the functional U55
(command_stream); both sit behind one seam (executor.NpuExecutor) the host reference and the
virtual U55 use."""
