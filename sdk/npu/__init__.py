"""A functional model of the Ethos-U55: decode Vela's command stream and execute it on the host."""
