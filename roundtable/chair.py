"""The Chair: one tick as a function of state, and the loop around it (lands with the coordination tools)."""
