"""Operator flows: one module per kind of record the operator acts on. Each flow picks its
target through `ConsoleBase.target` and changes state only through audited calls."""
