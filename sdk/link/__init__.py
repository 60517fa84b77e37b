"""The host link: framed messages over the console UART (docs/link.md)."""
