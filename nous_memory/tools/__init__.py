"""Agent tools: the store as tools an assistant's model calls by itself.

``ToolBox`` dispatches a model's tool call for one agent and renders the tools in the
OpenAI function-calling format; ``tools.mcp_server`` serves the same tools over MCP.
"""

from .definitions import DEFAULT_TOOL_NAMES, TOOL_NAMES, TOOLS, Tool, ToolPolicy, ToolResult
from .toolbox import ToolBox

__all__ = ["DEFAULT_TOOL_NAMES", "TOOLS", "TOOL_NAMES", "Tool", "ToolBox", "ToolPolicy",
           "ToolResult"]
