"""Everything Ethos-U, in one home: the NPU configurations and the compile spec (config), the
Vela payload a delegate carries (payload), its command stream (stream: registers, decode,
disasm), the functional model that executes it bit-exactly (functional) and the virtual U55
the firmware's driver programs over the link (device)."""
