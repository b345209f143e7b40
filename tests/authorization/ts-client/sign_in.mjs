// The official TypeScript MCP SDK's OAuth client (pinned in package.json) doing the whole flow, given only the
// server's URL, for the MCP authorization tests:
//
//   node sign_in.mjs URL REDIRECT_URI
//
// It connects; the server's 401 names its protected resource metadata (RFC 9728), from which the SDK finds the
// authorization server, registers itself (RFC 7591) and starts the authorization code grant with PKCE for the
// server's resource (RFC 8707). The person's browser is the test's: this script writes
//   {"authorize": URL}
// on stdout and reads back one line {"code": ..., "state": ...} from the redirect. It then checks the state,
// exchanges the code, connects again with the token, calls get_server_info and writes
//   {"account": LOGIN, "protocolVersion": ..., "accessToken": ..., "sessionId": ...}
// Anything that goes wrong ends it with its error on stderr and exit code 1.
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [url, redirectUri] = process.argv.slice(2);
const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// Everything the client keeps between the steps, in memory; the browser step is handed to the test.
class Provider {
  expectedState = randomBytes(16).toString('hex');
  saved = {};
  get redirectUrl() { return redirectUri; }
  get clientMetadata() {
    return {
      client_name: 'imap-mcp tests (TypeScript SDK)',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() { return this.expectedState; }
  clientInformation() { return this.saved.client; }
  saveClientInformation(client) { this.saved.client = client; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; }
  saveCodeVerifier(verifier) { this.saved.verifier = verifier; }
  codeVerifier() { return this.saved.verifier; }
  redirectToAuthorization(authorizationUrl) { this.saved.authorizationUrl = authorizationUrl; }
}

async function connected(provider) {
  const client = new Client({ name: 'imap-mcp-tests-ts', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await client.connect(transport);
  return { client, transport };
}

async function signIn(provider) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await new Client({ name: 'imap-mcp-tests-ts', version: '1.0.0' }).connect(transport);
    throw new Error('the server served a client without a token');
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || !provider.saved.authorizationUrl) throw error;
  }
  console.log(JSON.stringify({ authorize: provider.saved.authorizationUrl.href }));
  const { value } = await answers.next();
  const { code, state } = JSON.parse(value);
  if (state !== provider.expectedState) throw new Error(`the redirect's state ${state} is not the one sent`);
  await transport.finishAuth(code);
}

const provider = new Provider();
await signIn(provider);
const { client, transport } = await connected(provider);
const info = await client.callTool({ name: 'get_server_info', arguments: {} });
if (info.isError) throw new Error(`get_server_info failed: ${JSON.stringify(info.content)}`);
console.log(JSON.stringify({
  account: info.structuredContent.account.login,
  protocolVersion: transport.protocolVersion,
  accessToken: provider.saved.tokens.access_token,
  sessionId: transport.sessionId,
}));
await client.close();
process.exit(0);
