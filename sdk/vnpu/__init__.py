"""The virtual NPU: delegates of a firmware run executed on the host (docs/link.md)."""
