"""The demo: a small project whose agents are all played by roundtable's own scripted agent.

`workspace` prepares the demo's project (a git repository with a tiny calculator, initialised for
Roundtable, every agent the scripted one, the autopilot on); `team` starts scripted agents on an
owner's run for the console's `--demo`; `scripted` is the scripted agent itself, an MCP client
the supervisor launches as `python -m roundtable.demo.scripted` (the built-in `scripted` adapter).
The CLI (`roundtable demo`, `roundtable run --demo`) is the only importer: nothing in the runtime,
the servers or the console imports this package, and it imports only the layers below the console.
"""
