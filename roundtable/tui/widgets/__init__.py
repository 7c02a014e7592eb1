"""The console's panes, one widget per module."""
