"""The repository domain: the project's files and git, read and written safely.

The path guard every repository path passes (`pathguard`), file reads and literal search
(`repo`), the symbol index (`symbols`), content hashes (`hashing`), running `git` without a shell
(`git`), the patch parser, cross-check and content-addressed store (`patches`), a diff's lines
numbered per side (`diff_lines`), server-written edits to a patch (`edits`), the `git apply
--check` of a patch against its base (`applies`), and the scratch worktrees test runs see
(`scratch`). It imports no other domain.
"""
