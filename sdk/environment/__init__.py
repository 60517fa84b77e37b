"""What this machine has: the SDK's own folders (paths), the tools and packages it needs and
their versions (tools, pins), and the check of all of it (`sdk doctor`: doctor)."""
