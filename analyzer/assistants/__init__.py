"""Front ends for assistants: the agent skill, the MCP server and the summary document they read.

``skill`` writes the agent skill (SKILL.md and the collector); ``summary`` cuts a findings document to a
model's context; ``tools`` holds what each MCP tool does, on plain data and without the SDK;
``mcp_server`` registers those tools with the MCP SDK (imported only by ``hptriage mcp``).
"""
