"""bustle-soak: the soak driver (scenarios, invariant checks, reports)."""
