"""The governance domain: deciding whether a change may be applied.

Proposals and their patch revisions (`proposals`), votes (`votes`), line comments on a revision
(`comments`), human approvals (`approvals`), security reviews and the automatic scan (`security`,
`security_scan`), what those evidence records share (`evidence`), and the gates that combine all
of it with the policy for one revision (`gates`). It imports only the coordination, repository
and policy domains.
"""
