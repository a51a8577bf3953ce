"""The one side-effect gate, and what performs each kind of side effect."""
