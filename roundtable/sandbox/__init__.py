"""Sandboxes for commands that run unreviewed code: the test runs of `test.run` and supervised
agent sessions.

Two kinds, chosen by `runner.choose` (`sessions.choose` for supervised sessions):

* `bwrap` — bubblewrap, when it is installed and a trial sandbox starts (`bwrap.py`).
* `landlock` — no external tool: a launcher process (`launch.py`, started as `python -I -S`)
  enters new user, mount, network, PID and IPC namespaces (`namespaces.py`), builds a root from
  nothing holding only the mounts the spec lists (`layout.py`, `spec.py`), then restricts itself
  with a Landlock ruleset and starts the command under PID 1 (`inner.py`).

Both give: no network (a new network namespace with only a loopback of its own), only the
worktree and a private `/tmp` writable, the user's home, `/run`, the project's `.roundtable/` and
the legacy socket's directory absent, a memory limit (`RLIMIT_AS`), a process limit, no core
dumps, and a PID namespace so that killing the launcher kills every process the command started.

The modules that run inside the launcher (`spec`, `inner`, `namespaces`, `bwrap`, `launch`)
import only the standard library: the launcher starts with `python -I -S` and must stay small
and fast.
"""
