"""The coordination domain: who works on what, and when.

Tasks (`tasks`), claims on resources (the `claims` package, with `claims.grant` granting one in its
own transactions), the turn queue (`turns`), agent records (`agents`), runs (`runs`), memory
entries (`memory`), the Chair's writes (`chair_steps`), the autopilot's records (`autopilot`),
quotas on what agents create (`quotas`), the shared read model (`state`: `table.get_state`,
`table.watch`) and what a supervised session's task lets it read (`session_scope`). It imports
only the repository domain.
"""
