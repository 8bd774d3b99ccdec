"""Pulumi ComponentResources, one per concern, built from the resolved platform.

Each module pairs a typed ``*Args`` dataclass (built from the resolved spec slice) and a pure
planner with a thin ComponentResource that only instantiates what the planner decided.
"""
