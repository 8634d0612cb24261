// A client for the conformance suite's client scenarios (`conformance client --command ...`):
// the suite plays the server at the URL given as the last argument and names the scenario in
// MCP_CONFORMANCE_SCENARIO. With TOOLSEARCH_BIN set, the client under test is the gateway: a
// config whose one source is the suite's URL, `toolsearch serve` on it over stdio, driven by the
// TypeScript SDK's client through the controls. Without it, the same SDK client talks to the
// suite directly: what passes that way must pass through the gateway.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? "initialize";
const binary = process.env.TOOLSEARCH_BIN;

// What each scenario's client is expected to call, by the tool's own name.
const calls = {
  tools_call: ["add_numbers", { a: 5, b: 3 }],
  "elicitation-sep1034-client-defaults": ["test_client_elicitation_defaults", {}],
  "sse-retry": ["test_reconnection", {}],
};

const client = new Client(
  { name: "toolsearch-conformance-client", version: "1.0.0" },
  { capabilities: { elicitation: { form: { applyDefaults: true } } } },
);
// A person who accepts and fills in nothing: the SDK fills in the schema's defaults.
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: {} }));

let transport;
if (binary) {
  const dir = mkdtempSync(join(tmpdir(), "toolsearch-conformance-"));
  const config = join(dir, "toolsearch.toml");
  writeFileSync(
    config,
    `[[source]]\nname = "suite"\nurl = ${JSON.stringify(url)}\ngroup = "suite"\ndescription = "The conformance suite's server"\n`,
  );
  transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--config", config],
    stderr: "inherit",
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url));
}

await client.connect(transport);
await client.listTools();
const call = calls[scenario];
if (call) {
  const [tool, args] = call;
  const result = binary
    ? await client.callTool({
        name: "call_tool",
        arguments: { group: "suite", tool, arguments: args },
      })
    : await client.callTool({ name: tool, arguments: args });
  console.error(`${tool}: ${JSON.stringify(result).slice(0, 300)}`);
}
await client.close();
