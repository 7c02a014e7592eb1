"""Sandboxes for commands that run unreviewed code: the test runs of `test.run`.

Two kinds, chosen by `probe.choose`:

* `bwrap` — bubblewrap, when it is installed and a trial sandbox starts (`bwrap.py`).
* `landlock` — no external tool: a launcher process (`launch.py`, run as
  `python -m roundtable.sandbox.launch`) enters new user, mount, network, PID and IPC namespaces
  (`namespaces.py`), hides the private places by mounting empty tmpfs over them, then restricts
  itself with a Landlock ruleset (`landlock.py`) and executes the command.

Both give: no network (a new network namespace with only a loopback of its own), only the
worktree and a private `/tmp` writable, the user's home, `/run`, the project's `.roundtable/` and
the legacy socket's directory absent, a memory limit (`RLIMIT_AS`), a process limit, no core
dumps, and a PID namespace so that killing the launcher kills every process the command started.

The modules that run inside the launcher (`spec`, `landlock`, `namespaces`, `launch`) import only
the standard library: the launcher starts with `python -I -S` and must stay small and fast.
"""
