"""Helpers shared by several test directories (importing another directory's conftest is not done)."""
