"""Vela's command stream for the Ethos-U55: the register map (from Vela's own wheel), decoding
the words into operations and driver actions, and a listing of them (`sdk inspect
--npu-commands`)."""
