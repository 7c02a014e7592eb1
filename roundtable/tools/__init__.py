"""The tool surface: the registry (names, schemas, annotations) and one module per tool group."""
