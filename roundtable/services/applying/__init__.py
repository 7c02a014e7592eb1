"""The applying domain: from a validated proposal to a change in the project, and back.

`patch.validate`'s report over every gate (`validate`), the crash-safe apply (`apply`), the files
and database transitions of a patch transaction (`artefacts`, `transactions`), rollback
(`rollback`), recovery of an interrupted transaction when an owner starts (`recovery`), and the
named steps where a fault test may stop it (`failpoints`). It is the top domain.
"""
