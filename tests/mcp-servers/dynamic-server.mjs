// A stdio MCP server, on the official TypeScript SDK, whose lists grow on request: calling
// `grow` with {name} registers a new tool, `add_resource` {name} a resource `mem://<name>`,
// `add_prompt` {name} a prompt, and the SDK sends the matching notifications/*/list_changed.
// The gateway tests use it to check that an upstream's list changes reach the catalog and the
// gateway's own clients.
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

const resource = (name) =>
  server.registerResource(name, `mem://${name}`, { description: `The resource ${name}.` }, async (uri) => ({
    contents: [{ uri: uri.href, text: `contents of ${name}` }],
  }));
const prompt = (name) =>
  server.registerPrompt(name, { description: `The prompt ${name}.` }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: `say ${name}` } }],
  }));
// One of each before connecting, so the server announces resources and prompts at all.
resource("first");
prompt("first");

server.registerTool(
  "add_resource",
  { description: "Register a new resource mem://<name>.", inputSchema: { name: z.string() } },
  async ({ name }) => {
    resource(name);
    return { content: [{ type: "text", text: `added mem://${name}` }] };
  },
);
server.registerTool(
  "add_prompt",
  { description: "Register a new prompt.", inputSchema: { name: z.string() } },
  async ({ name }) => {
    prompt(name);
    return { content: [{ type: "text", text: `added prompt ${name}` }] };
  },
);

await server.connect(new StdioServerTransport());
