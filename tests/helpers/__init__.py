"""Test-only helpers: the scripted model double and the network guard. Never shipped."""
