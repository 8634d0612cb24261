// The server the MCP conformance suite's server scenarios expect (@modelcontextprotocol/conformance,
// `conformance list`): the tools, resources, prompts and behaviours each scenario names, on the
// official TypeScript SDK. The gateway's conformance test runs the suite against it directly and
// with it behind `toolsearch serve`.
//
//   node conformance-server.mjs            streamable HTTP on 127.0.0.1, a free port; prints
//                                          "listening on http://127.0.0.1:PORT/mcp"
//   node conformance-server.mjs --stdio    the same server over stdio
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// A 1x1 red PNG and a 44-byte silent WAV header with one sample.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQIAAACAgA==";

const text = (t) => ({ content: [{ type: "text", text: t }] });
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// A tool registered without an input schema gets only the request's `extra` as its argument.

function build() {
  const server = new McpServer(
    { name: "conformance-fixture", version: "1.0.0" },
    {
      capabilities: {
        logging: {},
        completions: {},
        resources: { subscribe: true, listChanged: true },
        tools: { listChanged: true },
        prompts: { listChanged: true },
      },
    },
  );
  const subscribed = new Set();

  server.registerTool(
    "test_simple_text",
    { description: "Answers with one text block." },
    async () => text("This is a simple text response for testing."),
  );
  server.registerTool(
    "test_image_content",
    { description: "Answers with a PNG image." },
    async () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }),
  );
  server.registerTool(
    "test_audio_content",
    { description: "Answers with a WAV sound." },
    async () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }),
  );
  server.registerTool(
    "test_embedded_resource",
    { description: "Answers with an embedded text resource." },
    async () => ({
      content: [
        {
          type: "resource",
          resource: {
            uri: "test://embedded-resource",
            mimeType: "text/plain",
            text: "This is an embedded resource content.",
          },
        },
      ],
    }),
  );
  server.registerTool(
    "test_multiple_content_types",
    { description: "Answers with text, an image and a resource." },
    async () => ({
      content: [
        { type: "text", text: "Multiple content types test:" },
        { type: "image", data: PNG, mimeType: "image/png" },
        {
          type: "resource",
          resource: {
            uri: "test://mixed-content-resource",
            mimeType: "application/json",
            text: JSON.stringify({ test: "data", value: 123 }),
          },
        },
      ],
    }),
  );
  server.registerTool(
    "test_tool_with_logging",
    { description: "Logs three messages at info level while it runs." },
    async (extra) => {
      const log = (data) =>
        extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      await log("Tool execution started");
      await pause(50);
      await log("Tool processing data");
      await pause(50);
      await log("Tool execution completed");
      return text("Logging test completed");
    },
  );
  server.registerTool(
    "test_error_handling",
    { description: "Always fails." },
    async () => {
      throw new Error("This tool intentionally returns an error for testing");
    },
  );
  server.registerTool(
    "test_tool_with_progress",
    { description: "Reports progress 0, 50 and 100 of 100 when asked for it." },
    async (extra) => {
      const token = extra._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress, total: 100 },
          });
        }
        if (progress < 100) await pause(50);
      }
      return text(`Progress test completed (token ${token ?? "none"})`);
    },
  );
  server.registerTool(
    "test_sampling",
    { description: "Asks the client's model to answer the prompt.", inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const result = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      const said = result.content?.type === "text" ? result.content.text : JSON.stringify(result.content);
      return text(`LLM response: ${said}`);
    },
  );
  const elicit = (params, extra) => extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema);
  server.registerTool(
    "test_elicitation",
    { description: "Asks the user for a name and an email.", inputSchema: { message: z.string() } },
    async ({ message }, extra) => {
      const r = await elicit(
        {
          message,
          requestedSchema: {
            type: "object",
            properties: {
              username: { type: "string", description: "User's response" },
              email: { type: "string", description: "User's email address" },
            },
            required: ["username", "email"],
          },
        },
        extra,
      );
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    },
  );
  server.registerTool(
    "test_elicitation_sep1034_defaults",
    { description: "Asks the user for fields that all have defaults." },
    async (extra) => {
      const r = await elicit(
        {
          message: "Confirm or change these values",
          requestedSchema: {
            type: "object",
            properties: {
              name: { type: "string", default: "John Doe" },
              age: { type: "integer", default: 30 },
              score: { type: "number", default: 95.5 },
              status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" },
              verified: { type: "boolean", default: true },
            },
          },
        },
        extra,
      );
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    },
  );
  server.registerTool(
    "test_elicitation_sep1330_enums",
    { description: "Asks the user to choose, in every enum form." },
    async (extra) => {
      const r = await elicit(
        {
          message: "Choose",
          requestedSchema: {
            type: "object",
            properties: {
              untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
              titledSingle: {
                type: "string",
                oneOf: [
                  { const: "value1", title: "First Option" },
                  { const: "value2", title: "Second Option" },
                  { const: "value3", title: "Third Option" },
                ],
              },
              legacyEnum: {
                type: "string",
                enum: ["opt1", "opt2", "opt3"],
                enumNames: ["Option One", "Option Two", "Option Three"],
              },
              untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
              titledMulti: {
                type: "array",
                items: {
                  anyOf: [
                    { const: "value1", title: "First Choice" },
                    { const: "value2", title: "Second Choice" },
                    { const: "value3", title: "Third Choice" },
                  ],
                },
              },
            },
          },
        },
        extra,
      );
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    },
  );
  server.registerTool(
    "test_reconnection",
    { description: "Answers after a short pause (the SSE polling scenario calls it)." },
    async () => {
      await pause(100);
      return text("Reconnection test completed");
    },
  );
  // A schema with 2020-12 keywords, listed as written: the SDK would list a zod schema's
  // translation, so its tools/list answer gets this one in place of the tool's.
  server.registerTool(
    "json_schema_2020_12_tool",
    { description: "Tool with JSON Schema 2020-12 features" },
    async () => text("ok"),
  );
  const schema2020 = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    $defs: {
      address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } },
    },
    properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
    additionalProperties: false,
  };
  const handlers = server.server._requestHandlers;
  const listTools = handlers.get("tools/list");
  handlers.set("tools/list", async (request, extra) => {
    const result = await listTools(request, extra);
    for (const tool of result.tools) {
      if (tool.name === "json_schema_2020_12_tool") tool.inputSchema = schema2020;
    }
    return result;
  });

  server.registerResource(
    "static-text",
    "test://static-text",
    { description: "A text resource", mimeType: "text/plain" },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }],
    }),
  );
  server.registerResource(
    "static-binary",
    "test://static-binary",
    { description: "A binary resource", mimeType: "image/png" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }] }),
  );
  server.registerResource(
    "watched-resource",
    "test://watched-resource",
    { description: "A resource clients may subscribe to", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "watched" }] }),
  );
  server.registerResource(
    "template",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { description: "Data by id", mimeType: "application/json" },
    async (uri, { id }) => ({
      contents: [
        {
          uri: uri.href,
          mimeType: "application/json",
          text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
        },
      ],
    }),
  );
  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    subscribed.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscribed.delete(request.params.uri);
    return {};
  });

  server.registerPrompt(
    "test_simple_prompt",
    { description: "A prompt without arguments" },
    async () => ({ messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] }),
  );
  server.registerPrompt(
    "test_prompt_with_arguments",
    {
      description: "A prompt with two arguments",
      argsSchema: {
        arg1: completable(z.string().describe("First test argument"), (value) =>
          ["paris", "park", "party"].filter((v) => v.startsWith(value ?? "")),
        ),
        arg2: z.string().describe("Second test argument"),
      },
    },
    async ({ arg1, arg2 }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  );
  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt that embeds a resource", argsSchema: { resourceUri: z.string() } },
    async ({ resourceUri }) => ({
      messages: [
        {
          role: "user",
          content: {
            type: "resource",
            resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." },
          },
        },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }),
  );
  server.registerPrompt(
    "test_prompt_with_image",
    { description: "A prompt with an image" },
    async () => ({
      messages: [
        { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
        { role: "user", content: { type: "text", text: "Please analyze the image above." } },
      ],
    }),
  );
  return server;
}

if (process.argv.includes("--stdio")) {
  await build().connect(new StdioServerTransport());
} else {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    if (!req.url?.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      if (typeof id === "string") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${port()}`, `localhost:${port()}`],
        onsessioninitialized: (sid) => sessions.set(sid, transport),
        onsessionclosed: (sid) => sessions.delete(sid),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  const port = () => http.address().port;
  http.listen(0, "127.0.0.1", () => {
    process.stdout.write(`listening on http://127.0.0.1:${port()}/mcp\n`);
  });
}
