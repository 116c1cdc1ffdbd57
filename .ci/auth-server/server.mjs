// A local OAuth 2.1 authorization server for the auth test suites: oidc-provider (pinned in
// package.json here), installed by .ci/setup into target/auth-server and started by the tests
// (crates/test-helpers/src/auth_server.rs) as `node server.mjs`. Nothing here is for
// production: the clients, secrets and the test-only routes below exist for tests.
//
// Environment: PORT (default 0 = any free port) on 127.0.0.1; FERRYMCP_AUTH_SERVER_DIR, the folder
// where `npm ci` installed package.json here (default: target/auth-server in this clone);
// FERRYMCP_AUTH_SERVER_EXIT_WITH_STDIN=1: exit when stdin closes (the tests' handle sets it, so
// no server outlives the test process that started it). Once it accepts connections it
// prints exactly one line on stdout, `listening http://127.0.0.1:<port>`; everything else
// (oidc-provider's notices and warnings included) goes to stderr. The issuer is
// `http://127.0.0.1:<port>` (no trailing slash).
//
// What it serves:
//   - Discovery at /.well-known/openid-configuration and /.well-known/oauth-authorization-server
//     (RFC 8414), the JWKS at /jwks (one RS256 key generated at start), the token endpoint at
//     /token and RFC 7662 introspection at /token/introspection.
//   - Clients (client_secret_basic and client_secret_post both accepted), grant types
//     client_credentials and urn:ietf:params:oauth:grant-type:token-exchange:
//       client-a / secret-a, client-b / secret-b              JWT access tokens (at+jwt, RS256)
//       opaque-a / opaque-secret-a, opaque-b / opaque-secret-b opaque access tokens
//       rs / rs-secret                                        a resource server: may introspect
//                                                             any token
//     A client-credentials token has `sub` = `client_id` = the client (RFC 9068), `aud` = the
//     requested `resource`, `scope` = the granted scopes, a lifetime of 300 s.
//   - Resource indicators (RFC 8707): any absolute http://127.0.0.1:* or http://localhost:* URI
//     is a resource; anything else is refused with `invalid_target`. Scopes: read write child
//     admin files files:read tools (or none).
//   - Token exchange (RFC 8693): subject_token (a JWT this server signed, or an active opaque
//     token of this server), subject_token_type urn:ietf:params:oauth:token-type:access_token,
//     resource and/or audience, scope. Issues a JWT with `aud` = the resource (or audience),
//     `sub` = the subject token's, `client_id` and `act.sub` = the exchanging client, and the
//     requested scopes the subject token also had (all of them when none are asked for). An
//     invalid subject token is 400 `invalid_grant`.
//
// Test-only routes:
//   POST /test/mint      body {"header": {...}, "claims": {...}}: signs `claims` as they are with
//                        the server's signing key; the header defaults to {"alg": "RS256",
//                        "kid": <the signing key's kid>, "typ": "at+jwt"} and the body's header
//                        overrides any field. Answers {"token": "<JWS>"}. For expired,
//                        not-yet-valid, wrong-audience or wrong-issuer tokens with a valid
//                        signature. The signature is always RS256 with that key, whatever the
//                        header's `alg` says, except `"alg": "none"`: then it is empty.
//   GET  /test/counters  {"jwks": <GET requests to /jwks so far>,
//                         "introspection": <requests to the introspection endpoint so far>}
//   POST /test/rotate    key rotation: publishes a second RS256 key in the JWKS (the first stays
//                        published) and signs everything from then on with it. Answers
//                        {"kid": <the new key's kid>, "previous": <the old one's>}; 409 once
//                        both keys are published (one rotation per server).

import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// oidc-provider prints notices with console.info; stdout carries only the readiness line.
console.log = console.error;
console.info = console.error;

// The packages live where .ci/setup installed them, not beside this file.
const installed = process.env.FERRYMCP_AUTH_SERVER_DIR
  || join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'target', 'auth-server');
const resolvePackage = createRequire(join(installed, 'package.json')).resolve;
const load = (name) => import(pathToFileURL(resolvePackage(name)).href);
const { default: Provider, errors } = await load('oidc-provider');
const jose = await load('jose');

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const SCOPES = ['read', 'write', 'child', 'admin', 'files', 'files:read', 'tools'];
const ACCESS_TOKEN_TTL = 300;
const ROUTES = { jwks: '/jwks', token: '/token', introspection: '/token/introspection' };
const MAX_MINT_BODY = 64 * 1024;

const CLIENTS = [
  ['client-a', 'secret-a'],
  ['client-b', 'secret-b'],
  ['opaque-a', 'opaque-secret-a'],
  ['opaque-b', 'opaque-secret-b'],
  ['rs', 'rs-secret'],
];
const OPAQUE_CLIENTS = new Set(['opaque-a', 'opaque-b']);
const RESOURCE_SERVER_CLIENT = 'rs';

// The signing keys, generated at start: the first is published and signs; the second is
// held back for /test/rotate.
async function newKey() {
  const { privateKey, publicKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const privateJwk = await jose.exportJWK(privateKey);
  const kid = await jose.calculateJwkThumbprint(privateJwk);
  Object.assign(privateJwk, { kid, alg: 'RS256', use: 'sig' });
  const publicJwk = { ...(await jose.exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, privateJwk, publicJwk };
}
const KEYS = [await newKey(), await newKey()];
let published = 1; // how many of KEYS the JWKS shows
let signer = KEYS[0];
const publishedJwks = () => ({ keys: KEYS.slice(0, published).map((key) => key.publicJwk) });

const counters = { jwks: 0, introspection: 0 };

// Whether `value` is a resource this server issues tokens for (RFC 8707 absolute URI on
// loopback, no fragment).
function isLoopbackResource(value) {
  if (typeof value !== 'string') return false;
  let url;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return url.protocol === 'http:'
    && (url.hostname === '127.0.0.1' || url.hostname === 'localhost')
    && url.hash === '' && !value.includes('#');
}

function resourceServerInfo(resource, client) {
  if (!isLoopbackResource(resource)) {
    throw new errors.InvalidTarget(`${resource} is not a resource of this server (only http://127.0.0.1:* and http://localhost:*)`);
  }
  const opaque = OPAQUE_CLIENTS.has(client?.clientId);
  return {
    audience: resource,
    scope: SCOPES.join(' '),
    accessTokenTTL: ACCESS_TOKEN_TTL,
    accessTokenFormat: opaque ? 'opaque' : 'jwt',
    ...(opaque ? {} : { jwt: { sign: { alg: 'RS256', kid: signer.kid } } }),
  };
}

const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', resolve);
});
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: CLIENTS.map(([id, secret]) => ({
    client_id: id,
    client_secret: secret,
    grant_types: ['client_credentials', TOKEN_EXCHANGE],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  jwks: { keys: KEYS.map((key) => key.privateJwk) },
  scopes: SCOPES,
  routes: ROUTES,
  cookies: { keys: [jose.base64url.encode(crypto.getRandomValues(new Uint8Array(32)))] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: {
      enabled: true,
      allowedPolicy: async (ctx, client, token) => client.clientId === RESOURCE_SERVER_CLIENT
        || client.clientId === token.clientId,
    },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => false,
      getResourceServerInfo: async (ctx, resource, client) => resourceServerInfo(resource, client),
    },
  },
  // RFC 9068: a client-credentials token's subject is the client; introspection shows it too.
  extraTokenClaims: async (ctx, token) => (token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined),
  ttl: {
    AccessToken: ACCESS_TOKEN_TTL,
    ClientCredentials: ACCESS_TOKEN_TTL,
  },
});

// RFC 8693 token exchange.
async function subjectOf(subjectToken) {
  const looksLikeJwt = subjectToken.split('.').length === 3;
  if (looksLikeJwt) {
    try {
      const { payload } = await jose.jwtVerify(subjectToken, jose.createLocalJWKSet(publishedJwks()), {
        issuer,
        algorithms: ['RS256'],
        requiredClaims: ['exp', 'sub'],
      });
      return { sub: payload.sub, scope: typeof payload.scope === 'string' ? payload.scope : '' };
    } catch (err) {
      throw new errors.InvalidGrant(`subject_token is not a valid token of this server (${err.code ?? err.message})`);
    }
  }
  const token = await provider.ClientCredentials.find(subjectToken);
  if (!token?.isValid) {
    throw new errors.InvalidGrant('subject_token is not an active token of this server');
  }
  return { sub: token.extra?.sub ?? token.clientId, scope: token.scope ?? '' };
}

provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { params, client } = ctx.oidc;
  if (!params.subject_token) {
    throw new errors.InvalidRequest('missing required parameter subject_token');
  }
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  const target = params.resource ?? params.audience;
  if (!target) {
    throw new errors.InvalidTarget('resource or audience is required');
  }
  if (!isLoopbackResource(target)) {
    throw new errors.InvalidTarget(`${target} is not a resource of this server (only http://127.0.0.1:* and http://localhost:*)`);
  }
  if (params.resource && params.audience && params.resource !== params.audience) {
    throw new errors.InvalidTarget('resource and audience name different targets');
  }
  const subject = await subjectOf(params.subject_token);
  const had = new Set(subject.scope.split(' ').filter(Boolean));
  const asked = (params.scope ?? '').split(' ').filter(Boolean);
  const granted = asked.length ? asked.filter((s) => had.has(s)) : [...had];

  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: issuer,
    sub: subject.sub,
    aud: target,
    client_id: client.clientId,
    act: { sub: client.clientId },
    iat: now,
    exp: now + ACCESS_TOKEN_TTL,
    jti: crypto.randomUUID(),
  };
  if (granted.length) claims.scope = granted.join(' ');
  const accessToken = await new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: signer.kid, typ: 'at+jwt' })
    .sign(signer.privateKey);

  ctx.body = {
    access_token: accessToken,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL,
    ...(granted.length ? { scope: granted.join(' ') } : {}),
  };
}, ['subject_token', 'subject_token_type', 'resource', 'audience', 'scope',
  'requested_token_type', 'actor_token', 'actor_token_type']);

provider.on('server_error', (ctx, err) => console.error('server_error', err));
// Why a grant was refused (the answer's error_description is generic for invalid_grant).
provider.on('grant.error', (ctx, err) => console.error(`grant.error: ${err.error}: ${err.error_detail ?? err.error_description ?? err.message}`));

function sendJson(res, status, body, type = 'application/json') {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': `${type}; charset=utf-8`,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

async function readJson(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_MINT_BODY) throw new Error(`body over ${MAX_MINT_BODY} bytes`);
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

async function mint(req, res) {
  let body;
  try {
    body = await readJson(req);
  } catch (err) {
    sendJson(res, 400, { error: 'invalid_request', error_description: `body is not JSON: ${err.message}` });
    return;
  }
  const claims = body?.claims ?? {};
  const header = { alg: 'RS256', kid: signer.kid, typ: 'at+jwt', ...(body?.header ?? {}) };
  if (typeof claims !== 'object' || Array.isArray(claims)) {
    sendJson(res, 400, { error: 'invalid_request', error_description: 'claims must be a JSON object' });
    return;
  }
  try {
    // jose's SignJWT would reject an `alg` that does not fit the key; sign the exact header.
    const signingInput = `${jose.base64url.encode(JSON.stringify(header))}.${jose.base64url.encode(JSON.stringify(claims))}`;
    if (header.alg === 'none') {
      sendJson(res, 200, { token: `${signingInput}.` });
      return;
    }
    const signature = await crypto.subtle.sign(
      { name: 'RSASSA-PKCS1-v1_5' },
      await crypto.subtle.importKey('jwk', { ...signer.privateJwk, alg: 'RS256' }, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, ['sign']),
      new TextEncoder().encode(signingInput),
    );
    sendJson(res, 200, { token: `${signingInput}.${jose.base64url.encode(new Uint8Array(signature))}` });
  } catch (err) {
    sendJson(res, 400, { error: 'invalid_request', error_description: err.message });
  }
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/test/mint' && req.method === 'POST') {
    mint(req, res).catch((err) => sendJson(res, 500, { error: 'server_error', error_description: err.message }));
    return;
  }
  if (path === '/test/counters' && req.method === 'GET') {
    sendJson(res, 200, counters);
    return;
  }
  if (path === '/test/rotate' && req.method === 'POST') {
    if (published === KEYS.length) {
      sendJson(res, 409, { error: 'already_rotated', error_description: 'this server rotates its key once' });
      return;
    }
    const previous = signer.kid;
    published += 1;
    signer = KEYS[published - 1];
    sendJson(res, 200, { kid: signer.kid, previous });
    return;
  }
  if (path === ROUTES.jwks && req.method === 'GET') {
    // Only the published keys (oidc-provider's own JWKS would show the held-back one too).
    counters.jwks += 1;
    sendJson(res, 200, publishedJwks(), 'application/jwk-set+json');
    return;
  }
  if (path === ROUTES.introspection) counters.introspection += 1;
  callback(req, res);
});

process.on('SIGTERM', () => process.exit(0));
if (process.env.FERRYMCP_AUTH_SERVER_EXIT_WITH_STDIN === '1') {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
process.stdout.write(`listening ${issuer}\n`);
