"""Model to program: load, quantize, partition (INT boundaries kept quantized), lower with
Vela, write the .pte and its report (pipeline is the entry; the rest are its steps)."""

# Said by `sdk export` and `sdk deploy` when nothing went to the NPU: not an error, a fact.
# Here (not in report.py) so the deploy's renderer says it without importing ExecuTorch.
CPU_ONLY = "no NPU partition: the program runs on the CPU"

# ExecuTorch's ETRecord beside the program (`sdk export --etrecord`, every `sdk deploy`): its
# Inspector names the operators of an ETDump with it. Here for the deploy, without torch.
ETRECORD_FILE = "etrecord.bin"
