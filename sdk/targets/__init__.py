"""targets."""
