"""The e2e-harness tier: real Claude Code and Codex as supervised sessions against a model stub."""
