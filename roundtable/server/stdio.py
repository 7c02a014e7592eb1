"""The stdio bridge (lands with the transports)."""
