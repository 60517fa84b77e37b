"""Where programs run (host reference, QEMU, the FVP, a board on a serial port, a labgrid place):
resources, drivers and one strategy per target (run.make_target is the only place that knows
their names), and flashing a board."""
