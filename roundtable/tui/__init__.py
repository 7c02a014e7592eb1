"""The operator's console (Textual)."""
