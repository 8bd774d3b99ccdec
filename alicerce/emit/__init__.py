"""Writers for generated files: atomic, deterministic bytes."""
