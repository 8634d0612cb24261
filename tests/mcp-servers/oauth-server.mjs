// A remote MCP server behind a real OAuth 2.1 authorization server, for the gateway's login
// tests. One process, three listeners on 127.0.0.1:
//
// - the authorization server: oidc-provider (dynamic registration, PKCE, resource indicators,
//   refresh tokens, revocation, introspection). Access tokens live ACCESS_TTL seconds. Its
//   login and consent are given at once for the user "alice" (there is no person to ask).
// - the MCP server (the TypeScript SDK's, stateless streamable HTTP) at /mcp: every request
//   needs a bearer token that the authorization server says is active and issued for this
//   server's URL (introspection); otherwise 401 with a challenge naming the protected
//   resource metadata (RFC 9728), served at /.well-known/oauth-protected-resource/mcp. Its
//   tool `whoami` answers the token's subject.
// - a browser, for the test: GET /browse?url=U opens U, follows every redirect with cookies
//   kept (the authorization server's interaction), ends at the login's loopback redirect, and
//   answers what that page said. POST /revoke?token=T&client_id=C revokes a token at the
//   authorization server (an access token's grant with it). POST /reject?token=T makes the MCP
//   server refuse that token from now on, as a server does whose keys changed. GET /stats
//   counts the grants the authorization server saw.
//
// Prints "listening on <MCP URL>" on stdout once all three listen.
import { createServer } from "node:http";
import Provider from "oidc-provider";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const ACCESS_TTL = Number(process.env.ACCESS_TTL ?? 4);

const listen = (server) =>
  new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));

// Ports first: the issuer and the resource name each other.
const asServer = createServer();
const rsServer = createServer();
const asPort = await listen(asServer);
const rsPort = await listen(rsServer);
const issuer = `http://127.0.0.1:${asPort}`;
const resource = `http://127.0.0.1:${rsPort}/mcp`;
const prm = `http://127.0.0.1:${rsPort}/.well-known/oauth-protected-resource/mcp`;
const rsClient = { client_id: "resource-server", client_secret: "resource-server-secret" };

const rejected = new Set();
const stats = { authorization_code: 0, refresh_token: 0, refused: 0, mcp_requests: 0 };

const provider = new Provider(issuer, {
  clients: [{ ...rsClient, grant_types: [], response_types: [], redirect_uris: [] }],
  scopes: ["openid", "offline_access", "mcp"],
  pkce: { required: () => true },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
        return { scope: "mcp", audience: resource, accessTokenTTL: ACCESS_TTL, accessTokenFormat: "opaque" };
      },
    },
  },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  // Tokens outlive the browser's session (there is no person to keep one).
  expiresWithSession: async () => false,
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: { AccessToken: ACCESS_TTL, RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600, AuthorizationCode: 60 },
});
provider.on("grant.success", (ctx) => {
  const type = ctx.oidc.params?.grant_type;
  if (type in stats) stats[type] += 1;
});
provider.on("grant.error", (_ctx, error) => {
  stats.refused += 1;
  stats.last_refusal = `${error.error}: ${error.error_description} (${error.error_detail})`;
});

// Login and consent, given at once for "alice".
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === "login") {
    return provider.interactionFinished(req, res, { login: { accountId: "alice" } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const handle = provider.callback();
asServer.on("request", (req, res) => {
  if (req.url.startsWith("/interaction/")) {
    interact(req, res).catch((e) => {
      res.statusCode = 500;
      res.end(String(e));
    });
    return;
  }
  handle(req, res);
});

// The resource server's view of a token: active, and issued for this server.
async function introspect(token) {
  const answer = await fetch(`${issuer}/token/introspection`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${rsClient.client_id}:${rsClient.client_secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ token }),
  });
  const info = await answer.json();
  const audience = [info.aud].flat();
  return info.active && audience.includes(resource) ? info : null;
}

function mcpServer(subject) {
  const server = new McpServer({ name: "oauth-protected", version: "1.0.0" });
  server.registerTool(
    "whoami",
    { description: "Who the caller's token speaks for.", inputSchema: {} },
    async () => ({ content: [{ type: "text", text: `you are ${subject}` }] }),
  );
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString();
}

// A browser: follows redirects with cookies, as far as the loopback redirect's page.
async function browse(start) {
  const cookies = new Map();
  let url = start;
  for (let hop = 0; hop < 20; hop++) {
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const answer = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
    for (const set of answer.headers.getSetCookie()) {
      const [pair] = set.split(";");
      const eq = pair.indexOf("=");
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const next = answer.headers.get("location");
    if (answer.status >= 300 && answer.status < 400 && next) {
      url = new URL(next, url).toString();
      continue;
    }
    return { status: answer.status, url, text: await answer.text() };
  }
  throw new Error("too many redirects");
}

rsServer.on("request", async (req, res) => {
  const url = new URL(req.url, `http://127.0.0.1:${rsPort}`);
  try {
    if (url.pathname === "/.well-known/oauth-protected-resource/mcp") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ resource, authorization_servers: [issuer], scopes_supported: ["mcp"] }));
      return;
    }
    if (url.pathname === "/browse") {
      const page = await browse(url.searchParams.get("url"));
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(page));
      return;
    }
    if (url.pathname === "/revoke" && req.method === "POST") {
      const answer = await fetch(`${issuer}/token/revocation`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          token: url.searchParams.get("token"),
          client_id: url.searchParams.get("client_id"),
        }),
      });
      res.statusCode = answer.status;
      res.end(await answer.text());
      return;
    }
    if (url.pathname === "/reject" && req.method === "POST") {
      rejected.add(url.searchParams.get("token"));
      res.end();
      return;
    }
    if (url.pathname === "/stats") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(stats));
      return;
    }
    if (url.pathname !== "/mcp") {
      res.statusCode = 404;
      res.end();
      return;
    }
    stats.mcp_requests += 1;
    const auth = req.headers.authorization ?? "";
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : null;
    const info = token && !rejected.has(token) ? await introspect(token) : null;
    if (!info) {
      res.statusCode = 401;
      res.setHeader("www-authenticate", `Bearer resource_metadata="${prm}"`);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ error: "invalid_token" }));
      return;
    }
    const body = req.method === "POST" ? JSON.parse(await readBody(req)) : undefined;
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = mcpServer(info.sub);
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (e) {
    if (!res.headersSent) res.statusCode = 500;
    res.end(String(e));
  }
});

console.log(`listening on ${resource}`);
// The reader of the announcement may go away; anything written later goes to stderr.
process.stdout.on("error", () => {});
console.log = console.info = (...args) => console.error(...args);
