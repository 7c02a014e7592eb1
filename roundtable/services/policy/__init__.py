"""The policy domain: the project's rules, read from `POLICIES.ROUNDTABLE.md`.

The format of the file — pydantic models of its YAML, the built-in defaults, reading the fenced
blocks (`file`); the loaded rules — path profiles, high-risk paths, consensus (`engine`); and the
policy as a running owner sees it, re-read when the file changes (`watch`). Every other domain
consults it, so it is the bottom domain and imports none of them.
"""
