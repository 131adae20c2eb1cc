"""Claude's memory tool: the commands, their reference texts and the pure edits."""
