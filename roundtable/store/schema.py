"""The database schema, in one place, and the migrations that bring a file up to it.

Each migration step is a tuple of single SQL statements, executed one by one as written.
`SCHEMA_VERSION` is stored in `PRAGMA user_version`. `migrate()` runs every missing step inside
one `BEGIN IMMEDIATE` transaction, so concurrent first opens serialise and a failure leaves no
partial schema; running it again on an up-to-date file changes nothing. A file whose version is
newer than this code refuses to open.

Every timestamp column holds UTC RFC 3339 with nine fractional digits (`clock.now()`); the
defaults below produce the same shape for rows written by hand.
"""

from __future__ import annotations

NOW = "(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000000Z')"

# One migration step: the SQL statements that bring version N-1 to N, run in order, each one
# statement (no trailing `;`, never split). Comments belong here in Python, not in the SQL.
Step = tuple[str, ...]

# Version 1: the whole schema. Later versions append a Step to MIGRATIONS; never edit a landed step.
_V1: Step = (
    f"""CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  goal TEXT,
  status TEXT NOT NULL DEFAULT 'active',
  started_at TEXT NOT NULL DEFAULT {NOW},
  ended_at TEXT,
  metadata_json TEXT NOT NULL DEFAULT '{{}}',
  workspace_id TEXT
)""",
    f"""CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  type TEXT NOT NULL,
  actor_id TEXT,
  task_id TEXT,
  payload_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_events_run_id ON events(run_id, id)",
    "CREATE INDEX idx_events_type ON events(type, id)",
    # The turn queue reads one run's turn events; without this it walks every event of the run.
    "CREATE INDEX idx_events_run_type ON events(run_id, type, id)",
    f"""CREATE TABLE agents (
  id TEXT PRIMARY KEY,
  role TEXT NOT NULL,
  name TEXT NOT NULL,
  adapter TEXT NOT NULL,
  command TEXT,
  model TEXT,
  status TEXT NOT NULL DEFAULT 'idle',
  is_enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    f"""CREATE TABLE agent_sessions (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  adapter TEXT NOT NULL,
  provider TEXT,
  model TEXT,
  external_session_id TEXT,
  external_resume_command TEXT,
  working_directory TEXT NOT NULL,
  mcp_socket TEXT,
  status TEXT NOT NULL DEFAULT 'active',
  started_at TEXT NOT NULL DEFAULT {NOW},
  last_seen_at TEXT,
  ended_at TEXT,
  metadata_json TEXT NOT NULL DEFAULT '{{}}',
  workspace_id TEXT
)""",
    "CREATE INDEX idx_agent_sessions_agent ON agent_sessions(agent_id, status)",
    f"""CREATE TABLE agent_session_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_agent_session_events_session ON agent_session_events(session_id, id)",
    """CREATE TABLE adapter_capabilities (
  adapter TEXT PRIMARY KEY,
  supports_resume INTEGER NOT NULL,
  supports_mcp INTEGER NOT NULL,
  supports_readonly_workspace INTEGER NOT NULL,
  supports_session_capture INTEGER NOT NULL,
  metadata_json TEXT NOT NULL DEFAULT '{}'
)""",
    f"""CREATE TABLE run_snapshots (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  snapshot_json TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    f"""CREATE TABLE tasks (
  id TEXT PRIMARY KEY,
  title TEXT NOT NULL,
  body_md TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'open',
  priority INTEGER NOT NULL DEFAULT 100,
  risk TEXT NOT NULL DEFAULT 'normal',
  assigned_agent_id TEXT,
  readable_paths_json TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_tasks_order ON tasks(priority, created_at, id)",
    "CREATE INDEX idx_tasks_status ON tasks(status, priority, created_at, id)",
    """CREATE TABLE resources (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  path TEXT,
  symbol TEXT,
  language TEXT,
  start_line INTEGER,
  end_line INTEGER,
  current_hash TEXT,
  metadata_json TEXT NOT NULL DEFAULT '{}'
)""",
    # fence: a number that strictly increases with every claim granted, so a proposal can record
    # which grant it relied on and an apply can refuse work done under a claim that was lost.
    f"""CREATE TABLE claims (
  id TEXT PRIMARY KEY,
  resource_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  claim_type TEXT NOT NULL,
  base_hash TEXT,
  status TEXT NOT NULL DEFAULT 'active',
  expires_at TEXT NOT NULL,
  heartbeat_at TEXT,
  renewable INTEGER NOT NULL DEFAULT 1,
  resume_policy TEXT NOT NULL DEFAULT 'hold',
  rationale_md TEXT,
  fence INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT {NOW},
  workspace_id TEXT
)""",
    "CREATE INDEX idx_claims_resource_status ON claims(resource_id, status)",
    "CREATE INDEX idx_claims_agent_status ON claims(agent_id, status)",
    "CREATE INDEX idx_claims_status_expires ON claims(status, expires_at)",
    f"""CREATE TABLE claim_contentions (
  id TEXT PRIMARY KEY,
  resource_id TEXT NOT NULL,
  claimant_id TEXT,
  challenged_claim_id TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'open',
  reason TEXT NOT NULL,
  resolved_by TEXT,
  resolved_at TEXT,
  requested_resource_id TEXT,
  requested_agent_id TEXT,
  requested_task_id TEXT,
  requested_mode TEXT,
  requested_path TEXT,
  resolution TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_contentions_resource_status ON claim_contentions(resource_id, status, created_at DESC)",
    """CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
)""",
    f"""CREATE TABLE proposals (
  id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  title TEXT NOT NULL,
  summary_md TEXT NOT NULL,
  patch_path TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending',
  risk TEXT NOT NULL DEFAULT 'normal',
  current_revision TEXT,
  revision_number INTEGER NOT NULL DEFAULT 0,
  expected_tests_json TEXT NOT NULL DEFAULT '[]',
  rollback_notes TEXT,
  workspace_id TEXT,
  deliberation_id TEXT,
  proposer_session_id TEXT,
  base_revision TEXT,
  vote_state TEXT NOT NULL DEFAULT 'pending',
  policy_state TEXT NOT NULL DEFAULT 'pending',
  approval_state TEXT NOT NULL DEFAULT 'pending',
  transaction_state TEXT NOT NULL DEFAULT 'not_started',
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT
)""",
    "CREATE INDEX idx_proposals_task ON proposals(task_id, status)",
    # One row per attached patch. sha256 names the file patches/<sha256>.diff; claim_fences_json
    # records {{claim_id: fence}} of the claims that covered the patch when it was attached.
    f"""CREATE TABLE patch_revisions (
  proposal_id TEXT NOT NULL,
  number INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  patch_path TEXT NOT NULL,
  touched_files_json TEXT NOT NULL DEFAULT '[]',
  claim_fences_json TEXT NOT NULL DEFAULT '{{}}',
  agent_id TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW},
  PRIMARY KEY (proposal_id, number)
)""",
    """CREATE TABLE proposal_resources (
  proposal_id TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  PRIMARY KEY (proposal_id, resource_id)
)""",
    f"""CREATE TABLE votes (
  id TEXT PRIMARY KEY,
  proposal_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  vote TEXT NOT NULL,
  confidence REAL,
  reason_md TEXT,
  revision TEXT,
  session_id TEXT,
  policy_weight INTEGER NOT NULL DEFAULT 1,
  policy_version TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_votes_proposal ON votes(proposal_id, created_at, id)",
    f"""CREATE TABLE decisions (
  id TEXT PRIMARY KEY,
  proposal_id TEXT,
  task_id TEXT,
  decision TEXT NOT NULL,
  rationale_md TEXT NOT NULL,
  decided_by TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    # status: pending (the apply intent, written before any file changes), applied, failed,
    # rolled_back. rollback_patch_path names rollback/<id>/; metadata_json holds file hashes.
    f"""CREATE TABLE transactions (
  id TEXT PRIMARY KEY,
  proposal_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  revision TEXT,
  before_git_hash TEXT NOT NULL,
  after_git_hash TEXT,
  status TEXT NOT NULL DEFAULT 'pending',
  applied_by TEXT NOT NULL DEFAULT 'orchestrator',
  applied_at TEXT,
  rollback_patch_path TEXT,
  metadata_json TEXT NOT NULL DEFAULT '{{}}',
  created_at TEXT NOT NULL DEFAULT {NOW},
  workspace_id TEXT
)""",
    "CREATE INDEX idx_transactions_status ON transactions(status)",
    f"""CREATE TABLE human_approvals (
  id TEXT PRIMARY KEY,
  proposal_id TEXT,
  task_id TEXT,
  subject TEXT NOT NULL,
  reason_md TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'requested',
  requested_by TEXT NOT NULL DEFAULT 'orchestrator',
  decision_md TEXT,
  decided_by TEXT,
  override_policy INTEGER NOT NULL DEFAULT 0,
  revision TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_human_approvals_proposal ON human_approvals(proposal_id, created_at)",
    f"""CREATE TABLE security_reviews (
  id TEXT PRIMARY KEY,
  proposal_id TEXT,
  resource_id TEXT,
  task_id TEXT,
  reviewer_id TEXT NOT NULL DEFAULT 'security',
  status TEXT NOT NULL DEFAULT 'approved',
  summary_md TEXT NOT NULL,
  findings_json TEXT NOT NULL DEFAULT '[]',
  revision TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_security_reviews_proposal ON security_reviews(proposal_id, created_at)",
    f"""CREATE TABLE test_runs (
  id TEXT PRIMARY KEY,
  proposal_id TEXT,
  task_id TEXT,
  command TEXT NOT NULL,
  status TEXT NOT NULL,
  summary_md TEXT,
  log_path TEXT,
  exit_code INTEGER,
  revision TEXT,
  outcome TEXT,
  agent_id TEXT,
  session_id TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW},
  finished_at TEXT
)""",
    "CREATE INDEX idx_test_runs_proposal ON test_runs(proposal_id, created_at)",
    f"""CREATE TABLE memory_entries (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  body_md TEXT NOT NULL,
  source_event_id INTEGER,
  importance INTEGER NOT NULL DEFAULT 50,
  status TEXT NOT NULL DEFAULT 'active',
  workspace_id TEXT,
  tags_json TEXT NOT NULL DEFAULT '[]',
  provenance_json TEXT NOT NULL DEFAULT '{{}}',
  source_session_id TEXT,
  source_proposal_id TEXT,
  confidence REAL NOT NULL DEFAULT 0.5,
  reliability REAL NOT NULL DEFAULT 0.5,
  pinned INTEGER NOT NULL DEFAULT 0,
  revision INTEGER NOT NULL DEFAULT 1,
  archived_at TEXT,
  resynthesis_status TEXT NOT NULL DEFAULT 'none',
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_memory_order ON memory_entries(importance DESC, created_at, id)",
    f"""CREATE TABLE session_capabilities (
  id TEXT PRIMARY KEY,
  token_sha256 TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  role TEXT NOT NULL,
  task_id TEXT NOT NULL,
  proposal_id TEXT,
  issued_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  max_expires_at TEXT NOT NULL,
  revoked_at TEXT,
  revoked_reason TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_session_capabilities_session ON session_capabilities(session_id)",
    # Per-principal bearer tokens for the shared HTTP endpoint (mcp.require_tokens); hash only.
    f"""CREATE TABLE access_tokens (
  id TEXT PRIMARY KEY,
  token_sha256 TEXT NOT NULL UNIQUE,
  principal TEXT NOT NULL,
  agent_id TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW},
  revoked_at TEXT
)""",
)

# Version 2: authenticated principals and evidence about the revision.
# Every event records who acted (the authenticated principal, e.g. `operator`, `agent:implementer-1`)
# and over which transport; a test run records the sandbox it ran in and the exact argv; memory
# entries keep their earlier versions.
_V2: Step = (
    "ALTER TABLE events ADD COLUMN principal TEXT",
    "ALTER TABLE events ADD COLUMN transport TEXT",
    "ALTER TABLE test_runs ADD COLUMN sandbox TEXT",
    "ALTER TABLE test_runs ADD COLUMN argv_json TEXT",
    "ALTER TABLE memory_entries ADD COLUMN author_id TEXT",
    f"""CREATE TABLE memory_revisions (
  entry_id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  title TEXT NOT NULL,
  body_md TEXT NOT NULL,
  edited_by TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT {NOW},
  PRIMARY KEY (entry_id, revision)
)""",
)

# Version 3: every task and proposal belongs to a run (`services.run_scope`). Rows
# written before this version take the run their creation was filed under: a task the run of its
# `task.created`/`task.replaced` event (else of a session capability issued for it); a proposal
# its task's run (else the run of its own `proposal.created` event). `''` where nothing recorded one.
_V3: Step = (
    "ALTER TABLE tasks ADD COLUMN run_id TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE proposals ADD COLUMN run_id TEXT NOT NULL DEFAULT ''",
    """UPDATE tasks SET run_id = coalesce(
  (SELECT e.run_id FROM events e
    WHERE e.task_id = tasks.id AND e.type IN ('task.created', 'task.replaced') AND e.run_id != ''
    ORDER BY e.id LIMIT 1),
  (SELECT c.run_id FROM session_capabilities c
    WHERE c.task_id = tasks.id AND c.run_id != ''
    ORDER BY c.issued_at, c.id LIMIT 1),
  '')""",
    """UPDATE proposals SET run_id = coalesce(
  (SELECT t.run_id FROM tasks t WHERE t.id = proposals.task_id AND t.run_id != ''),
  (SELECT e.run_id FROM events e
    WHERE e.type = 'proposal.created' AND e.run_id != '' AND e.task_id = proposals.task_id
      AND json_extract(e.payload_json, '$.proposal_id') = proposals.id
    ORDER BY e.id LIMIT 1),
  '')""",
    "CREATE INDEX idx_tasks_run ON tasks(run_id, status)",
    "CREATE INDEX idx_proposals_run ON proposals(run_id, status)",
)

# Version 4: workspaces — one git worktree per agent and task, outside the project, made from the
# same snapshot a test run uses. `base_commit` is the snapshot commit checked out, `base_tree` its
# tree; `gitdir` is the worktree's administrative directory inside the project's repository (the
# workspace's own `.git` file must keep pointing there). One live workspace per agent and task.
_V4: Step = (
    f"""CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  run_id TEXT NOT NULL DEFAULT '',
  proposal_id TEXT NOT NULL DEFAULT '',
  base_commit TEXT NOT NULL,
  base_tree TEXT NOT NULL,
  path TEXT NOT NULL,
  gitdir TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active',
  conflicts_json TEXT NOT NULL DEFAULT '[]',
  created_at TEXT NOT NULL DEFAULT {NOW},
  updated_at TEXT,
  remove_after TEXT,
  removed_at TEXT
)""",
    "CREATE UNIQUE INDEX idx_workspaces_live ON workspaces(agent_id, task_id) WHERE state != 'removed'",
    "CREATE INDEX idx_workspaces_task ON workspaces(task_id, state)",
)

# Version 5: what each supervised session spent (`services.sessions.usage`), read from the harness's own
# output as it streams: one row per session, rewritten with the session's running totals. The
# task, proposal and revision it worked for and the UTC day it started are kept with it, so rollups
# per task, revision, agent, run and day are one indexed sum. `cost_source` says where the cost
# came from: `harness` (it reported one), `prices` (the configured price table), '' (unknown).
_V5: Step = (
    f"""CREATE TABLE session_usage (
  session_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  proposal_id TEXT NOT NULL DEFAULT '',
  revision INTEGER NOT NULL DEFAULT 0,
  day TEXT NOT NULL,
  model TEXT NOT NULL DEFAULT '',
  input_tokens INTEGER NOT NULL DEFAULT 0,
  cached_input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd REAL NOT NULL DEFAULT 0,
  cost_source TEXT NOT NULL DEFAULT '',
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_session_usage_run ON session_usage(run_id)",
    "CREATE INDEX idx_session_usage_task ON session_usage(task_id)",
    "CREATE INDEX idx_session_usage_proposal ON session_usage(proposal_id, revision)",
    "CREATE INDEX idx_session_usage_agent ON session_usage(agent_id)",
    "CREATE INDEX idx_session_usage_day ON session_usage(day)",
)

# Version 6: line comments on a proposal's revision (`services.governance.comments`): by the operator or a
# reviewing agent, on a line the revision's diff shows (`side` new: the new file's line number;
# old: a removed line's), on a whole file (`line` NULL) or on the whole proposal (`path` '').
# `revision` is the revision's number, `revision_sha` its patch; a later revision leaves them on
# the one they were made on.
_V6: Step = (
    f"""CREATE TABLE proposal_comments (
  id TEXT PRIMARY KEY,
  proposal_id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  revision_sha TEXT NOT NULL,
  path TEXT NOT NULL DEFAULT '',
  line INTEGER,
  side TEXT NOT NULL DEFAULT 'new',
  body_md TEXT NOT NULL,
  author TEXT NOT NULL,
  session_id TEXT,
  created_at TEXT NOT NULL DEFAULT {NOW}
)""",
    "CREATE INDEX idx_proposal_comments ON proposal_comments(proposal_id, revision, created_at)",
)

# Version 7: indexes that keep bounded lists bounded as history grows: the pending proposals
# oldest first (`table.watch`) and one task's proposals in order (`proposal.list`) are read from
# an index range instead of every proposal of the project or of the task being sorted.
_V7: Step = (
    "CREATE INDEX idx_proposals_status ON proposals(status, created_at, id)",
    "CREATE INDEX idx_proposals_task_order ON proposals(task_id, created_at, id)",
)

# Version 8: whether a proposal's revision was already announced for review is one index probe
# (the Chair asks once per request) instead of a walk over every review request ever made.
# Partial: only `proposal.review_requested` events carry it, so other writes pay nothing.
_V8: Step = (
    "CREATE INDEX idx_events_review_requested ON events("
    "json_extract(payload_json, '$.proposal_id'), json_extract(payload_json, '$.revision'))"
    " WHERE type = 'proposal.review_requested'",
)

# Version 9: the first page of each list of `table.get_state` that grows with history (every
# claim, proposal, approval, review, decision and run ever made) is read from an index in its
# order instead of sorting the whole table: 2.9 ms of a 5.5 ms default view at 10,000 claims.
_V9: Step = (
    "CREATE INDEX idx_claims_order ON claims(created_at, id)",
    "CREATE INDEX idx_proposals_order ON proposals(created_at, id)",
    "CREATE INDEX idx_human_approvals_order ON human_approvals(created_at, id)",
    "CREATE INDEX idx_security_reviews_order ON security_reviews(created_at, id)",
    "CREATE INDEX idx_decisions_order ON decisions(created_at, id)",
    "CREATE INDEX idx_runs_order ON runs(started_at, id)",
    "CREATE INDEX idx_agents_order ON agents(created_at, id)",
)

# Version 10: where a session's usage was measured. `source` 'gateway': counted by the owner's
# gateway from the model API's own answers (authoritative; what the harness prints never replaces
# it); 'harness': read from the harness's output. `printed_tokens` / `printed_cost_usd` keep the
# harness's own last figures beside a gateway-measured row, as a cross-check (NULL cost: none).
_V10: Step = (
    "ALTER TABLE session_usage ADD COLUMN source TEXT NOT NULL DEFAULT 'harness'",
    "ALTER TABLE session_usage ADD COLUMN printed_tokens INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE session_usage ADD COLUMN printed_cost_usd REAL",
)

# Version 11: where a proposal lands beyond the working tree (`services.applying.landing`): the
# branch and the commit roundtable built from a revision, the pull request on the forge, and the
# forge CI evidence read for that commit (one row per proposal, replaced as revisions come).
_V11: Step = (
    f"""CREATE TABLE landings (
  proposal_id TEXT PRIMARY KEY,
  mode TEXT NOT NULL,
  ref TEXT NOT NULL DEFAULT '',
  base TEXT NOT NULL DEFAULT '',
  revision TEXT NOT NULL DEFAULT '',
  commit_sha TEXT NOT NULL DEFAULT '',
  pushed_sha TEXT NOT NULL DEFAULT '',
  pr_number INTEGER NOT NULL DEFAULT 0,
  pr_url TEXT NOT NULL DEFAULT '',
  pr_state TEXT NOT NULL DEFAULT '',
  checks_json TEXT NOT NULL DEFAULT '[]',
  ci_attempts INTEGER NOT NULL DEFAULT 0,
  ci_notified TEXT NOT NULL DEFAULT '',
  comments_seen_json TEXT NOT NULL DEFAULT '[]',
  updated_at TEXT NOT NULL DEFAULT {NOW}
)""",
)

MIGRATIONS: tuple[Step, ...] = (_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11)
SCHEMA_VERSION = len(MIGRATIONS)

# Every table the schema defines, for tests and tools that list them.
TABLES = (
    "runs",
    "events",
    "agents",
    "agent_sessions",
    "agent_session_events",
    "adapter_capabilities",
    "run_snapshots",
    "tasks",
    "resources",
    "claims",
    "claim_contentions",
    "counters",
    "proposals",
    "patch_revisions",
    "proposal_resources",
    "votes",
    "decisions",
    "transactions",
    "human_approvals",
    "security_reviews",
    "test_runs",
    "memory_entries",
    "session_capabilities",
    "access_tokens",
    "memory_revisions",
    "workspaces",
    "session_usage",
    "proposal_comments",
    "landings",
)
