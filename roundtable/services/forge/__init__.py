"""The forge: where pull requests, reviews and CI live (GitHub first).

`base` holds the small interface the landing and the gates need (`Forge`: open, update, close
and merge a pull request; read its reviews and review comments; read the check runs and commit
statuses of one commit; read a failed job's log) and its plain records; `github` implements it
over GitHub's REST API with httpx2; `connect` builds the configured one, the token read from the
environment variable the config names. Nothing here touches the database or git.
"""
