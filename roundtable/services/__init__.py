"""Domain services: one module per concept, plain async functions over the store."""
