"""The sessions domain: supervised agent sessions and what they may do and spend.

Session records (`records`: register, heartbeat, end, listing), capability tokens and the per-call
checks (`capabilities`), bearer tokens for the HTTP endpoint (`tokens`), the adapters that start or
resume each harness and its MCP configuration (`adapters`, `adapter_records`), preflight of the
configured harnesses (`preflight`), resume briefings (`briefing`), and what sessions spent and may
spend (`usage_stream`, `usage`, `budgets`). It sits above governance (a briefing quotes the
open comments on the agent's proposals).
"""
