"""The workspaces domain: one git worktree per agent and task, outside the project.

Creating, syncing, proposing from and collecting workspaces (`worktrees`), and git on a tree an
agent controlled without running anything it wrote (`workspace_git`). A workspace's changes become
a governed proposal, so it sits above governance and testing.
"""
