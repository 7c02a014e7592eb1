"""roundtable: a coordinator for teams of AI coding agents working on one repository."""

__version__ = "0.1.0"
