"""Transports: the legacy socket, Streamable HTTP, the stdio bridge and session endpoints."""
