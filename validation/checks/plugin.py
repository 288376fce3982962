"""pytest plugin for the node checks (filled in by the validation core)."""
