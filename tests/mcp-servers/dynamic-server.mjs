// A stdio MCP server, on the official TypeScript SDK, whose tool list grows on request:
// calling `grow` with {name} registers a new tool, and the SDK sends
// notifications/tools/list_changed. The gateway tests use it to check that an upstream's
// list change reaches the catalog.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "dynamic", version: "1.0.0" });

server.registerTool(
  "grow",
  { description: "Register a new tool with the given name.", inputSchema: { name: z.string() } },
  async ({ name }) => {
    server.registerTool(
      name,
      { description: `A tool added at run time: ${name}.`, inputSchema: {} },
      async () => ({ content: [{ type: "text", text: `hello from ${name}` }] }),
    );
    return { content: [{ type: "text", text: `added ${name}` }] };
  },
);

await server.connect(new StdioServerTransport());
