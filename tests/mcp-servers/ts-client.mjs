// The official TypeScript SDK's client against `toolsearch serve`, over streamable HTTP (URL) or
// stdio (--stdio BINARY CONFIG): the gateway serves tests/mcp-servers/conformance-server.mjs as
// group `own` (per_session), and the same server over HTTP as source `remote`, its tools listed
// directly. Checks that listed tools and full definitions keep the fields the server listed
// them with (`execution` too, which rmcp has no field for), discovery, a call through call_tool with progress, log
// messages, an elicitation and a sampling request answered by this client, and a resource read
// under its offered name. Prints "N passed, 0 failed" and exits 0 when every check holds.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

let passed = 0;
function check(condition, what, detail) {
  if (!condition) {
    console.error(`FAILED: ${what}: ${JSON.stringify(detail)}`);
    process.exit(1);
  }
  passed += 1;
}

const args = process.argv.slice(2);
const transport =
  args[0] === "--stdio"
    ? new StdioClientTransport({ command: args[1], args: ["serve", "--config", args[2]] })
    : new StreamableHTTPClientTransport(new URL(args[0]));

const client = new Client(
  { name: "ts-client", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
const asked = [];
const sampled = [];
const logs = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { username: "ts", email: "ts@example.com" } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  sampled.push(request.params.messages[0].content.text);
  return { role: "assistant", content: { type: "text", text: "ts says hi" }, model: "test-model" };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
await client.connect(transport);

const payload = (r) => JSON.parse(r.content[0].text);
const call = (tool, args = {}, options = {}) =>
  client.callTool(
    { name: "call_tool", arguments: { group: "own", tool, arguments: args } },
    CallToolResultSchema,
    options,
  );

// The first search, the instant the connection is up, finds the upstream's tools.
const found = payload(await client.callTool({ name: "discover_tools", arguments: { query: "progress" } }));
check(found.tools.some((t) => t.tool === "test_tool_with_progress"), "discover", found);

// Every tool of the TypeScript SDK's server is listed with `execution`: it survives the gateway
// from an HTTP upstream into the direct listing, and from a stdio upstream into a full definition.
const listed = (await client.listTools()).tools.find((t) => t.name === "test_simple_text");
check(listed?.execution?.taskSupport === "forbidden", "execution kept in the direct listing", listed);
const described = payload(
  await client.callTool({ name: "describe_tool", arguments: { group: "own", tool: "test_simple_text" } }),
);
check(described.tool?.execution?.taskSupport === "forbidden", "execution kept in a full definition", described);

const progress = [];
const r = await call("test_tool_with_progress", {}, { onprogress: (p) => progress.push(p.progress) });
check(!r.isError && JSON.stringify(progress) === "[0,50,100]", "progress through call_tool", progress);

await call("test_tool_with_logging");
await new Promise((resolve) => setTimeout(resolve, 200));
check(logs.length === 3 && logs.every((l) => l.logger === "own"), "log messages", logs);

const e = await call("test_elicitation", { message: "for ts" });
check(e.content[0].text.includes("ts@example.com") && asked.length === 1, "elicitation answered here", e);

const s = await call("test_sampling", { prompt: "hello?" });
check(s.content[0].text.includes("ts says hi") && sampled[0] === "hello?", "sampling answered here", s);

const read = await client.readResource({ uri: "toolsearch://own/test://static-text" });
check(read.contents[0].text.includes("static text resource"), "resource under its offered name", read);

await client.close();
console.log(`${passed} passed, 0 failed`);
