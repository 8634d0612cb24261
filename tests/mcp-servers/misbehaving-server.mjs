// A stdio MCP server, on the official TypeScript SDK, that misbehaves on request, for the
// gateway's fault tests. MISBEHAVE (environment) chooses how:
//   hang-init     reads stdin but never answers (initialize included)
//   die-on-start  writes a reason to stderr and exits 3 before any answer
//   slow-start    serves the tools below after 1.5 s
//   (unset)       serves the tools below
// Tools: echo {message}; sleep {ms} (answers after ms milliseconds); freeze (blocks the whole
// process forever: no later request, ping included, is ever answered); pid (its process id);
// until_cancelled (answers only when its client cancels it, or after 30 s); cancelled (how many
// calls of until_cancelled were cancelled, and why the last one was); log_level (the level its
// client last set with logging/setLevel, or "none").
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { SetLevelRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const mode = process.env.MISBEHAVE ?? "";

if (mode === "hang-init") {
  process.stdin.resume();
  setInterval(() => {}, 1 << 30);
} else if (mode === "die-on-start") {
  process.stderr.write("misbehaving-server: fatal: cannot open /srv/db: permission denied\n");
  process.exit(3);
} else {
  const server = new McpServer({ name: "misbehaving", version: "1.0.0" }, { capabilities: { logging: {} } });
  const text = (t) => ({ content: [{ type: "text", text: String(t) }] });
  let level = "none";
  server.server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    level = request.params.level;
    return {};
  });
  server.registerTool(
    "log_level",
    { description: "The level the client last set with logging/setLevel.", inputSchema: {} },
    async () => text(level),
  );
  server.registerTool(
    "echo",
    { description: "Echo the message back.", inputSchema: { message: z.string() } },
    async ({ message }) => text(message),
  );
  server.registerTool(
    "sleep",
    { description: "Answer after the given milliseconds.", inputSchema: { ms: z.number() } },
    async ({ ms }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      return text(`slept ${ms} ms`);
    },
  );
  server.registerTool(
    "freeze",
    { description: "Block the process forever.", inputSchema: {} },
    async () => {
      for (;;) {}
    },
  );
  const cancellations = [];
  server.registerTool(
    "until_cancelled",
    { description: "Wait until this call is cancelled (30 s at most).", inputSchema: {} },
    async (_args, extra) => {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, 30_000);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          cancellations.push(String(extra.signal.reason ?? ""));
          resolve();
        });
      });
      return text(extra.signal.aborted ? "cancelled" : "not cancelled");
    },
  );
  server.registerTool(
    "cancelled",
    { description: "How many calls of until_cancelled were cancelled, and the last reason.", inputSchema: {} },
    async () => text(JSON.stringify({ count: cancellations.length, last: cancellations.at(-1) ?? null })),
  );
  server.registerTool(
    "pid",
    { description: "This process's id.", inputSchema: {} },
    async () => text(process.pid),
  );
  if (mode === "slow-start") {
    await new Promise((resolve) => setTimeout(resolve, 1500));
  }
  await server.connect(new StdioServerTransport());
}
