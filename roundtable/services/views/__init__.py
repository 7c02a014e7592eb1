"""The operator's read model, beside the agents' (`coordination.state`, `table.get_state`): what
the console and `roundtable status` show, read in one snapshot per refresh — the `Overview` of the
short panes (`overview`, with its row types and the attention queue in `models`), one record in
full for the inspector and the single-record reads of the operator's flows (`entity`), and the
long lists read by pages (`pages`). Nothing here writes; the console changes state only through
`Runtime.call`, like an agent."""
