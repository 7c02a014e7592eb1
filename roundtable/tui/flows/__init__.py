"""Operator flows: one module per kind of record the operator acts on. Each flow is a `Flow`
widget of the main screen (`flow.py`); it picks its target through `ConsoleBase.target` and
changes state only through audited calls."""
