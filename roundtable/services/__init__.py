"""Domain services: plain async functions over the store, grouped by domain.

- `policy/`: the project's rules (`POLICIES.ROUNDTABLE.md`): its format, the loaded rules, the watch.
- `repository/`: the project's files and git — the path guard, reads and search, the symbol
  index, content hashes, the patch parser and store, a diff's numbered lines, server-written
  edits, scratch worktrees.
- `coordination/`: who works on what — tasks, claims, the turn queue, agents, runs, memory,
  the Chair's and the autopilot's records, quotas, the shared read model, and what a session's
  task lets it read.
- `governance/`: deciding about a change — proposals and revisions, votes, line comments, human
  approvals, security reviews and scans, and the gates that combine them with the policy.
- `sessions/`: supervised agent sessions — their records, capability tokens and per-call checks,
  bearer tokens, the adapters that start each harness, preflight, briefings, spend and budgets.
- `testing/`: test runs as evidence — the allowed commands, the sandboxed run, suggestions.
- `workspaces/`: an agent's own git worktree whose changes become a governed proposal.
- `applying/`: `patch.validate` and the crash-safe apply, its rollback and its recovery.

The domains are layered in that order, bottom to top (import-linter keeps it): a domain imports
only the ones below it; `testing` and `sessions` are independent of each other. What every
domain shares sits at this level: `project` (the context a service takes), `run_scope` (which
run a change belongs to), `paging` (keyset paging of lists) and `redact` (the secrets redactor).
"""
