"""Adapters to the tools that change real systems (ansible-runner); the only side-effect boundary."""
