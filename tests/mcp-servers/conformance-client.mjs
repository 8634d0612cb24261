// A client for the conformance suite's client scenarios (`conformance client --command ...`):
// the suite plays the server at the URL given as the last argument and names the scenario in
// MCP_CONFORMANCE_SCENARIO. With TOOLSEARCH_BIN set, the client under test is the gateway: a
// config whose one source is the suite's URL, `toolsearch serve` on it over stdio, driven by the
// TypeScript SDK's client through the controls. Without it, the same SDK client talks to the
// suite directly: what passes that way must pass through the gateway.
//
// An `auth/*` scenario (gateway only) logs in first, as a person would: the source gets
// `auth = "oauth"` (or the pre-registered client the suite names in MCP_CONFORMANCE_CONTEXT,
// or the suite's client metadata document), `toolsearch auth login` prints the URL to open,
// and this script plays the browser: it opens the URL, whose authorization server answers at
// once with a redirect, and follows that redirect to the gateway's loopback listener. Then it
// serves and calls through the gateway with the stored tokens. A `client_credentials` or
// enterprise-managed scenario needs no login: the gateway asks for its tokens itself.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
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

/// The source's `auth` line for an `auth/*` scenario, and the environment its secret is in.
function authFor(scenario) {
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}");
  if (context.idp_id_token) {
    return [
      `auth = { grant = "enterprise_managed", client_id = ${JSON.stringify(context.client_id)}, client_secret = "\${env:SUITE_CLIENT_SECRET}", idp_issuer = ${JSON.stringify(context.idp_issuer)}, idp_token_endpoint = ${JSON.stringify(context.idp_token_endpoint)}, idp_client_id = ${JSON.stringify(context.idp_client_id)}, id_token = "\${env:SUITE_ID_TOKEN}" }\n`,
      { SUITE_CLIENT_SECRET: context.client_secret, SUITE_ID_TOKEN: context.idp_id_token },
    ];
  }
  if (scenario.startsWith("auth/client-credentials") && context.private_key_pem) {
    return [
      `auth = { grant = "client_credentials", client_id = ${JSON.stringify(context.client_id)}, private_key = "\${env:SUITE_PRIVATE_KEY}", signing_algorithm = ${JSON.stringify(context.signing_algorithm ?? "ES256")} }\n`,
      { SUITE_PRIVATE_KEY: context.private_key_pem },
    ];
  }
  if (scenario.startsWith("auth/client-credentials") && context.client_secret) {
    return [
      `auth = { grant = "client_credentials", client_id = ${JSON.stringify(context.client_id)}, client_secret = "\${env:SUITE_CLIENT_SECRET}" }\n`,
      { SUITE_CLIENT_SECRET: context.client_secret },
    ];
  }
  if (context.client_id && context.client_secret) {
    return [
      `auth = { client_id = ${JSON.stringify(context.client_id)}, client_secret = "\${env:SUITE_CLIENT_SECRET}" }\n`,
      { SUITE_CLIENT_SECRET: context.client_secret },
    ];
  }
  if (scenario === "auth/basic-cimd") {
    return [
      `auth = { client_metadata_url = "https://conformance-test.local/client-metadata.json" }\n`,
      {},
    ];
  }
  return [`auth = "oauth"\n`, {}];
}

/// `toolsearch auth login suite`, with this script as the browser.
async function logIn(config, env) {
  const login = spawn(binary, ["auth", "login", "suite", "--config", config, "--timeout", "30"], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => login.on("exit", (code) => resolve(code)));
  const lines = createInterface({ input: login.stdout });
  for await (const line of lines) {
    if (!line.startsWith("http")) continue;
    const answer = await fetch(line, { redirect: "manual" });
    const back = answer.headers.get("location");
    if (!back) throw new Error(`the authorization URL answered ${answer.status} without a redirect`);
    const landed = await fetch(back);
    console.error(`redirect listener: ${landed.status} ${await landed.text()}`);
    break;
  }
  const code = await exited;
  if (code !== 0) throw new Error(`toolsearch auth login exited ${code}`);
}

let transport;
let loginConfig;
let loginEnv;
if (binary) {
  const dir = mkdtempSync(join(tmpdir(), "toolsearch-conformance-"));
  const config = join(dir, "toolsearch.toml");
  const [auth, secrets] = scenario.startsWith("auth/") ? authFor(scenario) : ["", {}];
  const env = { ...process.env, ...secrets, XDG_STATE_HOME: join(dir, "state") };
  writeFileSync(
    config,
    `[[source]]\nname = "suite"\nurl = ${JSON.stringify(url)}\ngroup = "suite"\ndescription = "The conformance suite's server"\n${auth}`,
  );
  [loginConfig, loginEnv] = [config, env];
  // A person logs in, unless the gateway asks for its tokens itself.
  if (auth && !/client_credentials|enterprise_managed/.test(auth)) await logIn(config, env);
  transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--config", config],
    env,
    stderr: "inherit",
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(url));
}

await client.connect(transport);
await client.listTools();
const call = scenario.startsWith("auth/") ? ["test-tool", {}] : calls[scenario];
if (call) {
  const [tool, args] = call;
  const once = () =>
    binary
      ? client.callTool({
          name: "call_tool",
          arguments: { group: "suite", tool, arguments: args },
        })
      : client.callTool({ name: tool, arguments: args });
  let result = await once();
  console.error(`${tool}: ${JSON.stringify(result).slice(0, 400)}`);
  // The gateway answers needs_auth when the server wants a login (more scope): the person
  // runs the login it names, and the model calls again.
  const text = result.content?.[0]?.text ?? "";
  if (binary && result.isError && text.includes('"needs_auth"')) {
    await logIn(loginConfig, loginEnv);
    result = await once();
    console.error(`${tool} after a new login: ${JSON.stringify(result).slice(0, 400)}`);
  }
}
await client.close();
