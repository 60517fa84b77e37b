"""The Ethos-U55 command stream: register table, decoder, disassembly (issue 11)."""
