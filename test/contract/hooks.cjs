/**
 * Dredd hooks for the contract test (run by scripts/contract-test.ts; see `bun run test:contract`).
 *
 * Every transaction of the spec has an entry in `cases` below: either a `before` that sets the credential and
 * the inputs so that the server really answers the documented status, or `skip` with the reason it cannot be
 * produced. A transaction without an entry fails, so a new operation or status in the spec needs a case here.
 *
 * The data is seeded in `beforeAll` through the admin API (Node's global fetch). The server is started by the
 * script with CONTRACT_SERVER_URL and CONTRACT_ADMIN_TOKEN, on an empty data directory.
 *
 * Bodies are validated against the spec's schemas: Dredd 14's OpenAPI 3 parser produces no body schema (it
 * only compares the keys of an example, see the FIXME in @apielements/openapi3-parser parseMediaTypeObject),
 * so each transaction gets `expected.bodySchema`: the documented response schema, converted from OpenAPI 3.0
 * to JSON Schema draft-07, which Gavel validates with Ajv.
 */
"use strict";

const { readFileSync } = require("node:fs");
const hooks = require("hooks");

const SERVER = process.env.CONTRACT_SERVER_URL;
const ADMIN_TOKEN = process.env.CONTRACT_ADMIN_TOKEN;
const REQUEST_TIMEOUT_MS = 15000;

/** An 8×8 PNG (made with sharp): extension, declared type and content agree. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAAEUlEQVQImWMwTjuDFTEMLQkAuYZZQQ0kCIcAAAAASUVORK5CYII=",
  "base64",
);
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>');
const MISSING_ID = 999999;
/** A public address literal: accepted without DNS, never contacted (the endpoints are switched off). */
const WEBHOOK_URL = "https://93.184.216.34/contract-hook";
const SKIP_500 = "a 500 needs a failing storage or database; a healthy server cannot be made to answer it from outside";

// ---------------------------------------------------------------------------------------------------------
// HTTP helpers for seeding

async function call(method, path, { token, json, body, contentType, headers: extra } = {}) {
  const headers = { ...extra };
  if (token) headers.authorization = `Bearer ${token}`;
  if (json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(json);
  } else if (contentType) {
    headers["content-type"] = contentType;
  }
  const res = await fetch(`${SERVER}${path}`, { method, headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed };
}

async function ok(method, path, options) {
  const res = await call(method, path, options);
  if (res.status !== 200) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.data;
}

const admin = (method, path, json) => ok(method, path, { token: ADMIN_TOKEN, json });

/** A multipart/form-data body built by hand, so each part's declared Content-Type is exactly the one given. */
function multipart(parts) {
  const boundary = `----dredd${Math.random().toString(16).slice(2)}`;
  const chunks = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += "\r\n";
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.from(p.value), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

const pngPart = (filename = "contract.png") => ({ name: "file", value: PNG, filename, contentType: "image/png" });

async function upload(token, parts = [pngPart()]) {
  const m = multipart(parts);
  return ok("POST", "/api/v1/upload", { token, body: m.body, contentType: m.contentType });
}

async function createUser(username) {
  const user = await admin("POST", "/api/admin/users", { username, email: `${username}@example.com` });
  const { token } = await admin("POST", `/api/admin/users/${user.id}/tokens`);
  return { id: user.id, token };
}

// ---------------------------------------------------------------------------------------------------------
// Transaction helpers

function header(t, name, value) {
  for (const key of Object.keys(t.request.headers)) {
    if (key.toLowerCase() === name.toLowerCase()) delete t.request.headers[key];
  }
  if (value !== undefined) t.request.headers[name] = value;
}

/** Sets (or, with no token, removes) the Authorization header. */
const auth = (t, token) => header(t, "Authorization", token ? `Bearer ${token}` : undefined);

/** Replaces the path (keeping the query, unless one is given). `query` null removes it. */
function target(t, path, query) {
  const [currentPath, currentQuery] = t.fullPath.split("?");
  const q = query === undefined ? currentQuery : query;
  t.fullPath = (path || currentPath) + (q ? `?${q}` : "");
  t.request.uri = t.fullPath;
}

function jsonBody(t, value) {
  t.request.body = typeof value === "string" ? value : JSON.stringify(value);
  header(t, "Content-Type", "application/json");
}

function formBody(t, fields) {
  t.request.body = new URLSearchParams(fields).toString();
  header(t, "Content-Type", "application/x-www-form-urlencoded");
}

function multipartBody(t, parts) {
  const m = multipart(parts);
  t.request.body = m.body;
  header(t, "Content-Type", m.contentType);
}

/** A body in a type the operation does not declare (for the 415 answers). */
function plainBody(t) {
  t.request.body = "name=contract";
  header(t, "Content-Type", "text/plain");
}

const requestType = (t) => {
  const key = Object.keys(t.request.headers).find((k) => k.toLowerCase() === "content-type");
  return key ? String(t.request.headers[key]) : "";
};

/** POST /images/tokens is described twice (JSON and form); both transactions share one name. */
function tokenRequest(t, fields) {
  if (requestType(t).startsWith("application/x-www-form-urlencoded")) formBody(t, fields);
  else jsonBody(t, fields);
}

// ---------------------------------------------------------------------------------------------------------
// Response schemas: OpenAPI 3.0 Schema Objects → JSON Schema draft-07

let spec = null;
const loadSpec = (t) => (spec ??= JSON.parse(readFileSync(t.origin.filename, "utf8")));

/** `nullable`, boolean `exclusiveMinimum/Maximum` and component references, the 3.0 dialect's differences. */
function toJsonSchema(node, refs) {
  if (Array.isArray(node)) return node.map((n) => toJsonSchema(n, refs));
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/")) {
      const name = v.slice("#/components/schemas/".length);
      refs.add(name);
      out.$ref = `#/definitions/${name}`;
    } else if (k === "nullable" || k === "example") {
      // handled below / documentation only
    } else if (k === "properties" || k === "definitions") {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, toJsonSchema(sub, refs)]));
    } else {
      out[k] = toJsonSchema(v, refs);
    }
  }
  for (const [flag, bound] of [
    ["exclusiveMinimum", "minimum"],
    ["exclusiveMaximum", "maximum"],
  ]) {
    if (typeof out[flag] === "boolean") {
      if (out[flag] && out[bound] !== undefined) out[flag] = out[bound];
      else delete out[flag];
      if (typeof out[flag] === "number") delete out[bound];
    }
  }
  if (node.nullable === true && out.type !== undefined) {
    out.type = [].concat(out.type, "null");
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  return out;
}

/** The documented JSON schema of the transaction's answer, with the components it references. */
function responseSchema(t) {
  const doc = loadSpec(t);
  const operation = doc.paths[t.origin.resourceName]?.[t.request.method.toLowerCase()];
  const response = operation?.responses?.[t.expected.statusCode];
  const schema = response?.content?.["application/json"]?.schema;
  if (!schema) return null;
  const refs = new Set();
  const root = toJsonSchema(schema, refs);
  const definitions = {};
  const queue = [...refs];
  while (queue.length) {
    const name = queue.shift();
    if (definitions[name]) continue;
    const found = new Set();
    definitions[name] = toJsonSchema(doc.components.schemas[name], found);
    for (const n of found) if (!definitions[n]) queue.push(n);
  }
  return { $schema: "http://json-schema.org/draft-07/schema#", ...root, definitions };
}

// ---------------------------------------------------------------------------------------------------------
// Seed

const s = {};
let seedError = null;
let apiSwitchedOff = false;

async function setApi(enabled) {
  await admin("PATCH", "/api/admin/settings", { api_enabled: enabled });
  apiSwitchedOff = !enabled;
}

async function seed() {
  await admin("PATCH", "/api/admin/settings", { api_enabled: true, guest_upload_enabled: false });
  s.alice = await createUser("alice"); // the spec's example for GET /api/admin/users?username=
  s.album = await admin("POST", `/api/admin/users/${s.alice.id}/albums`, { name: "Contract album" });
  const issued = await ok("POST", "/api/v1/images/tokens", { token: s.alice.token, json: { num: 1, seconds: 3600 } });
  s.temporary = issued.tokens[0].token;
  s.aliceImageToDelete = (await upload(s.alice.token, [pngPart("delete-me.png")])).key;
  s.bob = await createUser("bob");
  s.bobImage = (await upload(s.bob.token, [pngPart("bob.png")])).key;
  s.revocable = await admin("POST", `/api/admin/users/${s.bob.id}/tokens`);
  s.group = await admin("POST", "/api/admin/groups", { name: "Contract group" });
  s.strategy = await admin("POST", "/api/admin/strategies", { name: "Contract strategy", driver: "local", config: {} });
  s.dave = await createUser("dave"); // signed out everywhere by the admin API
  s.eve = await createUser("eve"); // deleted by the admin API, with her image
  await upload(s.eve.token, [pngPart("eve.png")]);
  s.adminImageToDelete = (await upload(s.bob.token, [pngPart("admin-delete-me.png")])).key;
  // site-wide webhook endpoints at a public address literal (no DNS), switched off so that nothing is ever sent:
  // the test event's delivery to a disabled endpoint fails at once (and can then be resent)
  s.webhook = await admin("POST", "/api/admin/webhooks", { url: WEBHOOK_URL, events: ["image.uploaded"], description: "Contract" });
  s.oidc = await admin("POST", "/api/admin/oidc-providers", {
    slug: "contract",
    label: "Contract ID",
    issuer: "https://id.example.com",
    client_id: "contract",
  });
  s.oidcToDelete = await admin("POST", "/api/admin/oidc-providers", {
    slug: "contract-gone",
    label: "Gone",
    issuer: "https://id.example.com",
    client_id: "gone",
  });
  s.invitation = await admin("POST", "/api/admin/invitations", { max_uses: 1 });
  await admin("PATCH", `/api/admin/webhooks/${s.webhook.id}`, { enabled: false });
  s.webhookToDelete = await admin("POST", "/api/admin/webhooks", { url: WEBHOOK_URL, events: ["image.uploaded"] });
  await admin("PATCH", `/api/admin/webhooks/${s.webhookToDelete.id}`, { enabled: false });
  s.webhookDelivery = (await admin("POST", `/api/admin/webhooks/${s.webhook.id}/test`)).delivery_id;
}

/** Waits until the queue's worker has attempted the delivery (it fails at once: its endpoint is disabled). */
async function attempted(endpointId, deliveryId) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const { deliveries } = await admin("GET", `/api/admin/webhooks/${endpointId}/deliveries`);
    const d = deliveries.find((x) => x.id === deliveryId);
    if (d && d.status !== "pending") return;
    if (Date.now() > deadline) throw new Error(`delivery ${deliveryId} is still pending after 30 s (is the webhook worker running?)`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Cases, by transaction name

const cases = {};
/** Registers the cases of one operation: `{status: before | {skip: reason}}`. */
function operation(prefix, byStatus) {
  if (byStatus[401] && !byStatus[429]) byStatus = { ...byStatus, 429: throttled(byStatus[401]) };
  for (const [status, c] of Object.entries(byStatus)) {
    cases[`${prefix} > ${status} > application/json`] = typeof c === "function" ? { before: c } : c;
  }
}
const skip = (reason) => ({ skip: reason });

let throttledSeq = 0;
/**
 * 429: the request of the operation's 401 case, with a wrong token, from an address (X-Forwarded-For; the server
 * runs with TRUST_PROXY=1) that has just failed 31 times: it is refused before its credential is looked at.
 */
const throttled = (case401) => async (t) => {
  const address = `203.0.113.${++throttledSeq}`;
  for (let i = 0; i < 31; i++) {
    await call("GET", "/api/v1/profile", { token: "wrong-token", headers: { "x-forwarded-for": address } });
  }
  await (typeof case401 === "function" ? case401 : case401.before)(t);
  auth(t, "wrong-token");
  header(t, "X-Forwarded-For", address);
};
/** 403 from the site-wide API switch: off just before the request, on again in `after`. */
const apiOff = (prepare) => ({
  before: async (t) => {
    auth(t, s.alice.token);
    prepare(t);
    await setApi(false);
  },
  after: () => setApi(true),
});

// --- /api/v1 -----------------------------------------------------------------------------------------------

operation("/api/v1/profile > Read the account profile", {
  200: (t) => auth(t, s.alice.token),
  401: (t) => auth(t, null),
  403: (t) => auth(t, s.temporary), // a temporary token is for POST /upload only
  500: skip(SKIP_500),
});

operation("/api/v1/strategies > List the usable storage strategies", {
  200: (t) => auth(t, s.alice.token), // ?q=loc finds "Local"
  401: (t) => auth(t, null), // guest upload is off
  403: (t) => auth(t, s.temporary),
  422: (t) => {
    auth(t, s.alice.token);
    target(t, null, `q=${"x".repeat(101)}`); // at most 100 characters
  },
  500: skip(SKIP_500),
});

operation("/api/v1/upload > Upload an image", {
  200: (t) => {
    auth(t, s.alice.token);
    multipartBody(t, [pngPart("contract-upload.png"), { name: "album_id", value: String(s.album.id) }, { name: "permission", value: "0" }]);
  },
  400: (t) => {
    auth(t, s.alice.token);
    multipartBody(t, [{ name: "file", value: SVG, filename: "vector.svg", contentType: "image/svg+xml" }]); // SVG is refused
  },
  401: (t) => {
    auth(t, null); // no header, no `token` field, guest upload off
    multipartBody(t, [pngPart()]);
  },
  403: apiOff((t) => multipartBody(t, [pngPart()])), // a temporary token is accepted here: use the site-wide switch
  422: (t) => {
    auth(t, s.alice.token);
    multipartBody(t, [{ name: "permission", value: "1" }]); // no file field
  },
  408: skip("a 408 needs a sender that stalls mid-body; Dredd sends whole bodies (test/security/hardening.test.ts stalls one)"),
  503: skip("a 503 needs the server's 64 upload bodies in flight at once; test/security/hardening.test.ts holds them"),
  500: skip(SKIP_500),
});

operation("/api/v1/images > List the account's images", {
  200: (t) => auth(t, s.alice.token),
  401: (t) => auth(t, `${MISSING_ID}|not-a-token`), // a wrong credential
  403: (t) => auth(t, s.temporary),
  422: (t) => {
    auth(t, s.alice.token);
    target(t, null, "per_page=0&page=1");
  },
  500: skip(SKIP_500),
});

operation("/api/v1/images/{key} > Delete an image", {
  200: (t) => {
    auth(t, s.alice.token);
    target(t, `/api/v1/images/${s.aliceImageToDelete}`);
  },
  401: (t) => auth(t, null),
  403: (t) => {
    auth(t, s.temporary);
    target(t, `/api/v1/images/${s.bobImage}`);
  },
  404: (t) => {
    auth(t, s.alice.token);
    target(t, `/api/v1/images/${s.bobImage}`); // another account's image looks missing
  },
  422: (t) => {
    auth(t, s.alice.token);
    target(t, `/api/v1/images/${"k".repeat(256)}`); // at most 255 characters
  },
  500: skip(SKIP_500),
});

let rateSeq = 0;
operation("/api/v1/images/tokens > Issue temporary upload tokens", {
  200: (t) => {
    auth(t, s.alice.token);
    tokenRequest(t, { num: 2, seconds: 600 });
  },
  // a known caller beyond its issuing rate fails a check: 400 with Retry-After, never 429 (that is for strangers)
  400: {
    before: async (t) => {
      const user = await createUser(`contract_rate_${++rateSeq}`);
      for (let i = 0; i < 6; i++) await ok("POST", "/api/v1/images/tokens", { token: user.token, json: { num: 100, seconds: 60 } });
      auth(t, user.token);
      tokenRequest(t, { num: 1, seconds: 60 });
    },
    after: (t) => {
      const retry = Number(t.real?.headers?.["retry-after"]);
      if (!(retry >= 1 && retry <= 60)) t.fail = `the issuing-rate refusal carries no Retry-After (got ${JSON.stringify(t.real?.headers)})`;
    },
  },
  401: (t) => {
    auth(t, null);
    tokenRequest(t, { num: 1, seconds: 60 });
  },
  403: (t) => {
    auth(t, s.temporary);
    tokenRequest(t, { num: 1, seconds: 60 });
  },
  422: (t) => {
    auth(t, s.alice.token);
    tokenRequest(t, { num: 0, seconds: 60 }); // num is 1–100
  },
  500: skip(SKIP_500),
});

// --- /api/1/upload: the Chevereto and ImgBB dialect --------------------------------------------------------

const COMPAT = "/api/1/upload > Upload an image (Chevereto and ImgBB dialect)";
const isForm = (t) => requestType(t).startsWith("application/x-www-form-urlencoded");
/**
 * The dialect's body in the transaction's request type: multipart with the file part, or urlencoded with its base64
 * (the key first, as the server reads at most 64 KB before it knows the sender). `as: "image"` is ImgBB's name.
 */
function compatBody(t, { key, file = PNG, filename = "compat.png", type = "image/png", as = "source" } = {}) {
  if (isForm(t)) {
    formBody(t, { ...(key ? { key } : {}), [as]: file.toString("base64") });
  } else {
    multipartBody(t, [...(key ? [{ name: "key", value: key }] : []), { name: as, value: file, filename, contentType: type }]);
  }
}
/** The request of a case, then a query (`format=txt`, …) of its own. */
const withQuery = (query, prepare) => async (t) => {
  await prepare(t);
  target(t, null, query);
};
/** The text answers' check: the body, read as text, must satisfy `test`. */
const textAfter = (what, test) => (t) => {
  const body = String(t.real?.body ?? "");
  const headers = t.real?.headers ?? {};
  const typed = String(t.expected.statusCode) === "302" || String(headers["content-type"] ?? "").startsWith("text/plain");
  if (!typed || !test(body, headers)) t.fail = `${what}: got ${t.real?.statusCode} ${JSON.stringify(t.real?.headers)} ${body.slice(0, 200)}`;
};
const compatCases = {
  // ImgBB's answer from the urlencoded request (the source named `image`), Chevereto's from the multipart one
  200: (t) => {
    auth(t, null);
    target(t, null, null);
    compatBody(t, { key: s.alice.token, as: isForm(t) ? "image" : "source" });
  },
  400: (t) => {
    auth(t, null);
    target(t, null, null);
    compatBody(t, { key: s.alice.token, file: SVG, filename: "vector.svg", type: "image/svg+xml" }); // SVG is refused
  },
  401: (t) => {
    auth(t, null); // no key anywhere, guest upload off
    target(t, null, null);
    compatBody(t, {});
  },
  403: {
    before: async (t) => {
      auth(t, null);
      target(t, null, null);
      compatBody(t, { key: s.alice.token });
      await setApi(false);
    },
    after: () => setApi(true),
  },
  415: (t) => {
    auth(t, null);
    target(t, null, null);
    header(t, "X-API-Key", s.alice.token);
    plainBody(t);
  },
  408: skip(
    "a 408 needs a sender that stalls mid-body; Dredd sends whole bodies (test/api/chevereto-upload.test.ts and test/security/hardening.test.ts stall one)",
  ),
  500: skip(SKIP_500),
  503: skip("a 503 needs the server's 64 upload bodies in flight at once; test/security/hardening.test.ts holds them"),
};
operation(COMPAT, compatCases);
const imageUrl = (body) => body.startsWith(`${SERVER}/i/`) && !body.includes("\n");
// format=txt: the URL as text, refusals as their message alone
cases[`${COMPAT} > 200 > text/plain`] = {
  before: withQuery("format=txt", compatCases[200]),
  after: textAfter("format=txt answers the image URL", imageUrl),
};
cases[`${COMPAT} > 302`] = {
  before: withQuery("format=redirect", compatCases[200]),
  after: textAfter("format=redirect answers 302 to the image URL", (_body, headers) => imageUrl(String(headers.location ?? ""))),
};
for (const status of [400, 401, 415]) {
  cases[`${COMPAT} > ${status} > text/plain`] = {
    before: withQuery("format=txt", compatCases[status]),
    after: textAfter("a refusal with format=txt is its message", (body) => body.length > 0 && !body.startsWith("{")),
  };
}
cases[`${COMPAT} > 403 > text/plain`] = {
  before: withQuery("format=txt", compatCases[403].before),
  after: async (t) => {
    await setApi(true);
    textAfter("a refusal with format=txt is its message", (body) => body.includes("disabled"))(t);
  },
};
cases[`${COMPAT} > 429 > text/plain`] = {
  before: withQuery("format=txt", throttled(compatCases[401])),
  after: textAfter("a refusal with format=txt is its message", (body) => body.includes("retry")),
};
for (const status of [408, 500, 503]) cases[`${COMPAT} > ${status} > text/plain`] = compatCases[status];

// --- /api/admin --------------------------------------------------------------------------------------------

const asAdmin = (t) => auth(t, ADMIN_TOKEN);
const wrongAdmin = (t) => auth(t, "not-the-admin-token-0000");
/** The admin cases shared by every operation with a JSON body. */
const adminWrite = (path, ok200, invalid422) => ({
  200: (t) => {
    asAdmin(t);
    if (path) target(t, path());
    jsonBody(t, ok200());
  },
  401: (t) => {
    wrongAdmin(t);
    if (path) target(t, path());
    jsonBody(t, ok200());
  },
  400: (t) => {
    asAdmin(t);
    if (path) target(t, path());
    jsonBody(t, '{"name": '); // malformed JSON
  },
  415: (t) => {
    asAdmin(t);
    if (path) target(t, path());
    plainBody(t);
  },
  422: (t) => {
    asAdmin(t);
    if (path) target(t, path());
    jsonBody(t, invalid422);
  },
  500: skip(SKIP_500),
});
const missing = (path, body) => (t) => {
  asAdmin(t);
  target(t, path);
  if (body) jsonBody(t, body);
};

operation("/api/admin/settings > Read the site settings", {
  200: asAdmin,
  401: (t) => auth(t, null),
  500: skip(SKIP_500),
});
operation(
  "/api/admin/settings > Change the site settings",
  adminWrite(null, () => ({ api_enabled: true, guest_upload_enabled: false, registration_enabled: false }), { api_enabled: "yes" }),
);

const pageOutOfRange = (t) => {
  asAdmin(t);
  target(t, null, "per_page=501"); // pages hold at most 500
};
operation("/api/admin/groups > List user groups", { 200: asAdmin, 401: wrongAdmin, 422: pageOutOfRange, 500: skip(SKIP_500) });
let groupSeq = 0;
operation(
  "/api/admin/groups > Create a user group",
  adminWrite(null, () => ({ name: `Contract group ${++groupSeq}`, uploads_per_minute: 30 }), { enabled: true }), // name is required
);
operation("/api/admin/groups/{id} > Change a user group (flags, limits, ordered strategies)", {
  ...adminWrite(
    () => `/api/admin/groups/${s.group.id}`,
    () => ({ max_pixels: 40000000, strategy_ids: [1] }),
    { max_pixels: 0 },
  ),
  404: missing(`/api/admin/groups/${MISSING_ID}`, { name: "Nobody" }),
});

operation("/api/admin/groups/{id}/strip-metadata > Apply a group's metadata policy to its existing images (one batch)", {
  ...adminWrite(
    () => `/api/admin/groups/${s.group.id}/strip-metadata`,
    () => ({ dry_run: true, limit: 10 }),
    { limit: 0 },
  ),
  404: missing(`/api/admin/groups/${MISSING_ID}/strip-metadata`, { dry_run: true }),
});

operation("/api/admin/strategies > List storage strategies", { 200: asAdmin, 401: wrongAdmin, 422: pageOutOfRange, 500: skip(SKIP_500) });
let strategySeq = 0;
operation(
  "/api/admin/strategies > Create a storage strategy",
  adminWrite(null, () => ({ name: `Contract local ${++strategySeq}`, driver: "local", config: {}, quota_kb: 1024 }), { name: "No driver" }),
);
operation("/api/admin/strategies/{id} > Change a storage strategy", {
  ...adminWrite(
    () => `/api/admin/strategies/${s.strategy.id}`,
    () => ({ quota_kb: 2048, enabled: true }),
    { driver: "ftp" },
  ),
  404: missing(`/api/admin/strategies/${MISSING_ID}`, { enabled: false }),
});

operation("/api/admin/strategies/{id}/test > Test a storage strategy's storage", {
  200: (t) => missing(`/api/admin/strategies/${s.strategy.id}/test`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/strategies/${s.strategy.id}/test`);
  },
  404: missing(`/api/admin/strategies/${MISSING_ID}/test`),
  422: missing("/api/admin/strategies/0/test"),
  500: skip(SKIP_500),
});
operation("/api/admin/images > List every image (users' and guests')", {
  200: (t) => {
    asAdmin(t);
    target(t, null, `user_id=${s.bob.id}&visibility=public`); // the spec's examples together (user_id + guests=true) are a 422
  },
  401: wrongAdmin,
  422: (t) => {
    asAdmin(t);
    target(t, null, "per_page=101");
  },
  500: skip(SKIP_500),
});
operation("/api/admin/images/{key} > Delete any image", {
  200: (t) => {
    asAdmin(t);
    target(t, `/api/admin/images/${s.adminImageToDelete}`);
  },
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/images/${s.bobImage}`);
  },
  404: missing("/api/admin/images/no-such-image"),
  422: missing(`/api/admin/images/${"k".repeat(256)}`),
  500: skip(SKIP_500),
});
operation("/api/admin/users > List users (optionally by exact username)", {
  200: asAdmin, // ?username=alice finds the seeded user
  401: wrongAdmin,
  422: (t) => {
    asAdmin(t);
    target(t, null, "username=alice&username=bob"); // one username, not a list
  },
  500: skip(SKIP_500),
});
let userSeq = 0;
operation(
  "/api/admin/users > Create a user",
  adminWrite(
    null,
    () => {
      const username = `carol${++userSeq}`;
      return { username, email: `${username}@example.com`, name: "Carol" };
    },
    { username: "no spaces allowed", email: "carol@example.com" },
  ),
);
operation("/api/admin/users/{id} > Read a user", {
  200: (t) => missing(`/api/admin/users/${s.alice.id}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/users/${s.alice.id}`);
  },
  404: missing(`/api/admin/users/${MISSING_ID}`),
  422: missing("/api/admin/users/not-a-number"),
  500: skip(SKIP_500),
});
operation("/api/admin/users/{id} > Change a user (enabled, group, capacity, name, email, role, password)", {
  // a password for the user center's sign-in too (at least 8 characters: a shorter one is another 422)
  ...adminWrite(
    () => `/api/admin/users/${s.alice.id}`,
    () => ({ name: "Alice", enabled: true, password: "contract password" }),
    { capacity_kb: -1 },
  ),
  404: missing(`/api/admin/users/${MISSING_ID}`, { name: "Nobody" }),
});
operation("/api/admin/users/{id}/tokens > Create a permanent API token for a user", {
  200: (t) => missing(`/api/admin/users/${s.bob.id}/tokens`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/users/${s.bob.id}/tokens`);
  },
  400: (t) => {
    asAdmin(t);
    target(t, `/api/admin/users/${s.bob.id}/tokens`);
    jsonBody(t, '{"label": '); // malformed JSON
  },
  404: missing(`/api/admin/users/${MISSING_ID}/tokens`),
  415: (t) => {
    asAdmin(t);
    target(t, `/api/admin/users/${s.bob.id}/tokens`);
    plainBody(t);
  },
  422: missing("/api/admin/users/0/tokens"), // ids are positive
  500: skip(SKIP_500),
});
operation("/api/admin/users/{id}/tokens > List a user's tokens", {
  200: (t) => missing(`/api/admin/users/${s.alice.id}/tokens`)(t), // alice's permanent token and the temporary tokens it issued
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/users/${s.alice.id}/tokens`);
  },
  404: missing(`/api/admin/users/${MISSING_ID}/tokens`),
  422: missing("/api/admin/users/0/tokens"),
  500: skip(SKIP_500),
});
operation("/api/admin/tokens/{id} > Revoke a token (permanent or temporary)", {
  200: (t) => missing(`/api/admin/tokens/${s.revocable.id}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/tokens/${s.revocable.id}`);
  },
  404: missing(`/api/admin/tokens/${MISSING_ID}`),
  422: missing("/api/admin/tokens/abc"),
  500: skip(SKIP_500),
});
operation("/api/admin/users/{id}/albums > Create an album for a user", {
  ...adminWrite(
    () => `/api/admin/users/${s.alice.id}/albums`,
    () => ({ name: "Holidays" }),
    { name: "" },
  ),
  404: missing(`/api/admin/users/${MISSING_ID}/albums`, { name: "Nobody" }),
});
/** The cases of an admin operation on one user without a body: 200 on `user()`, 401, 404, 422. */
const onUser = (suffix, user) => ({
  200: (t) => missing(`/api/admin/users/${user().id}${suffix}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/users/${user().id}${suffix}`);
  },
  404: missing(`/api/admin/users/${MISSING_ID}${suffix}`),
  422: missing(`/api/admin/users/0${suffix}`), // ids are positive
  500: skip(SKIP_500),
});
operation(
  "/api/admin/users/{id}/sign-out > Revoke a user's tokens and end their sessions",
  onUser("/sign-out", () => s.dave),
);
operation(
  "/api/admin/users/{id}/password-link > Make a one-time link to set a user's password",
  onUser("/password-link", () => s.alice),
);
operation(
  "/api/admin/users/{id} > Delete a user and all their images",
  onUser("", () => s.eve),
);
operation("/api/admin/audit-log > Read the audit log of administration", {
  200: asAdmin,
  401: wrongAdmin,
  422: (t) => {
    asAdmin(t);
    target(t, null, "limit=0");
  },
  500: skip(SKIP_500),
});
operation(
  "/api/admin/storage/reconcile > Reconcile stored objects with the image records",
  adminWrite(null, () => ({ dry_run: false }), { dry_run: "yes" }), // the spec's example query (?dry_run=true) makes it a dry run
);

/** The cases of an admin operation on one site-wide webhook endpoint without a body: 200 on `endpoint()`, 401, 404, 422. */
const onWebhook = (suffix, endpoint) => ({
  200: (t) => missing(`/api/admin/webhooks/${endpoint().id}${suffix}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/webhooks/${endpoint().id}${suffix}`);
  },
  404: missing(`/api/admin/webhooks/${MISSING_ID}${suffix}`),
  422: missing(`/api/admin/webhooks/0${suffix}`), // ids are positive
  500: skip(SKIP_500),
});
/** Switches off every site-wide endpoint that is on, so that no event of the run is sent anywhere. */
async function webhooksOff() {
  const { endpoints } = await admin("GET", "/api/admin/webhooks");
  for (const e of endpoints.filter((x) => x.enabled)) await admin("PATCH", `/api/admin/webhooks/${e.id}`, { enabled: false });
}
operation("/api/admin/webhooks > List the site-wide webhook endpoints (or one user's)", {
  200: (t) => {
    asAdmin(t);
    target(t, null, null); // the site-wide ones
  },
  401: wrongAdmin,
  404: (t) => {
    asAdmin(t);
    target(t, null, `user_id=${MISSING_ID}`);
  },
  422: (t) => {
    asAdmin(t);
    target(t, null, "user_id=0");
  },
  500: skip(SKIP_500),
});
const createWebhook = adminWrite(null, () => ({ url: WEBHOOK_URL, events: ["user.disabled"], description: "Contract create" }), {
  url: "ftp://hooks.example.com/x", // http(s) only
  events: ["image.uploaded"],
});
operation("/api/admin/webhooks > Create a site-wide webhook endpoint", { ...createWebhook, 200: { before: createWebhook[200], after: webhooksOff } });
operation(
  "/api/admin/webhooks/{id} > Read a site-wide webhook endpoint",
  onWebhook("", () => s.webhook),
);
operation("/api/admin/webhooks/{id} > Change a site-wide webhook endpoint (URL, description, events, enabled)", {
  ...adminWrite(
    () => `/api/admin/webhooks/${s.webhook.id}`,
    () => ({ description: "Contract changed", events: ["image.deleted"], enabled: false }),
    { events: [] },
  ),
  404: missing(`/api/admin/webhooks/${MISSING_ID}`, { enabled: false }),
});
operation(
  "/api/admin/webhooks/{id} > Delete a site-wide webhook endpoint",
  onWebhook("", () => s.webhookToDelete),
);
operation(
  "/api/admin/webhooks/{id}/secret > Rotate a site-wide webhook endpoint's signing secret",
  onWebhook("/secret", () => s.webhook),
);
operation(
  "/api/admin/webhooks/{id}/test > Send a test event to a site-wide webhook endpoint",
  onWebhook("/test", () => s.webhook),
);
operation("/api/admin/webhooks/{id}/deliveries > Read a site-wide webhook endpoint's delivery log", {
  ...onWebhook("/deliveries", () => s.webhook),
  200: (t) => {
    asAdmin(t);
    target(t, `/api/admin/webhooks/${s.webhook.id}/deliveries`, null);
  },
});
const resendPath = (endpointId, deliveryId) => `/api/admin/webhooks/${endpointId}/deliveries/${deliveryId}/resend`;
operation("/api/admin/webhooks/{id}/deliveries/{delivery_id}/resend > Send a delivery of a site-wide webhook endpoint again", {
  200: async (t) => {
    await attempted(s.webhook.id, s.webhookDelivery); // a pending delivery is a 404
    asAdmin(t);
    target(t, resendPath(s.webhook.id, s.webhookDelivery));
  },
  401: (t) => {
    wrongAdmin(t);
    target(t, resendPath(s.webhook.id, s.webhookDelivery));
  },
  404: (t) => missing(resendPath(s.webhook.id, MISSING_ID))(t), // no such delivery
  422: (t) => missing(resendPath(s.webhook.id, "abc"))(t),
  500: skip(SKIP_500),
});
let resendable;
const LATER = { since: "2999-01-01T00:00:00Z" }; // no failed delivery is that recent: nothing is sent
operation("/api/admin/webhooks/{id}/resend-failed > Send again a site-wide webhook endpoint's failed deliveries since a time", {
  ...adminWrite(
    () => `/api/admin/webhooks/${s.webhook.id}/resend-failed`,
    () => LATER,
    { since: "yesterday" },
  ),
  // an endpoint switched on (one that is off is a 400), switched off again afterwards
  200: {
    before: async (t) => {
      resendable = await admin("POST", "/api/admin/webhooks", { url: WEBHOOK_URL, events: ["user.disabled"] });
      asAdmin(t);
      target(t, `/api/admin/webhooks/${resendable.id}/resend-failed`);
      jsonBody(t, LATER);
    },
    after: webhooksOff,
  },
  404: missing(`/api/admin/webhooks/${MISSING_ID}/resend-failed`, LATER),
});

// --- service -----------------------------------------------------------------------------------------------

operation("/health > Health check", {
  200: (t) => auth(t, null),
  503: skip("a 503 needs the database to stop answering while the server runs; not producible from outside"),
});
let unwritable;
operation("/health/ready > Readiness check", {
  200: (t) => auth(t, null),
  // an enabled strategy whose storage cannot be written (a directory under /proc), disabled again afterwards
  503: {
    before: async (t) => {
      auth(t, null);
      unwritable = await admin("POST", "/api/admin/strategies", { name: "Unwritable", driver: "local", config: { root: "/proc/contract-ready/uploads" } });
    },
    after: () => admin("PATCH", `/api/admin/strategies/${unwritable.id}`, { enabled: false }),
  },
});

// ---------------------------------------------------------------------------------------------------------
// Wiring

const run = (fn, t, done) => {
  Promise.resolve()
    .then(() => fn(t))
    .catch((e) => {
      t.fail = `hook error: ${e?.message ? e.message : e}`;
    })
    .then(() => done());
};

hooks.beforeAll((transactions, done) => {
  const names = new Set(transactions.map((t) => t.name));
  for (const name of Object.keys(cases)) {
    if (!names.has(name)) hooks.log(`warning: the case "${name}" matches no transaction of the spec; remove it`);
  }
  if (!SERVER || !ADMIN_TOKEN) {
    seedError = "CONTRACT_SERVER_URL and CONTRACT_ADMIN_TOKEN must be set (run `bun run test:contract`)";
    return done();
  }
  seed()
    .catch((e) => {
      seedError = `seeding failed: ${e.message}`;
      hooks.log(seedError);
    })
    .then(() => done());
});

let transactionSeq = 0;
hooks.beforeEach((t, done) => {
  const c = cases[t.name];
  if (!c) {
    t.fail = "no contract case for this transaction in test/contract/hooks.cjs";
    return done();
  }
  if (c.skip) {
    t.skip = true;
    hooks.log(`skip ${t.name}: ${c.skip}`);
    return done();
  }
  if (seedError) {
    t.fail = seedError;
    return done();
  }
  t.skip = false; // Dredd skips non-2xx answers unless told otherwise
  run(
    async (tx) => {
      if (/ > application\/json$/.test(tx.name)) {
        const schema = responseSchema(tx);
        if (!schema) throw new Error(`no JSON schema documented for ${tx.request.method} ${tx.origin.resourceName} ${tx.expected.statusCode}`);
        tx.expected.bodySchema = schema;
      } else {
        // a text answer (or none): its case's `after` checks the body and its type (text/plain with a charset);
        // the spec's example is not the answer
        delete tx.expected.body;
        for (const name of Object.keys(tx.expected.headers ?? {})) if (name.toLowerCase() === "content-type") delete tx.expected.headers[name];
      }
      if (apiSwitchedOff) await setApi(true);
      // each transaction from an address of its own (the server trusts one proxy): the 401 cases of every operation
      // would otherwise spend one address's failed-authentication burst, and a 429 case sets its own
      const n = ++transactionSeq;
      header(tx, "X-Forwarded-For", `198.18.${n >> 8}.${n & 255}`);
      await c.before(tx);
    },
    t,
    done,
  );
});

hooks.afterEach((t, done) => {
  const c = cases[t.name];
  if (!c?.after) return done();
  run(c.after, t, done);
});

hooks.afterAll((_transactions, done) => {
  if (!apiSwitchedOff) return done();
  setApi(true)
    .catch((e) => hooks.log(`could not switch the API back on: ${e.message}`))
    .then(() => done());
});

// --- mail, invitations, second factors, identity providers ----------------------------------------------------
const SKIP_SMTP = "a sent test mail needs an SMTP server, which the contract run does not start (test/web/mail.test.ts covers it)";
operation("/api/admin/mail > Read the mail settings", { 200: asAdmin, 401: wrongAdmin, 500: skip(SKIP_500) });
operation(
  "/api/admin/mail > Change the mail settings",
  adminWrite(null, () => ({ email_verification: false }), { smtp_port: "many" }),
);
operation("/api/admin/mail/test > Send a test mail", {
  ...adminWrite(null, () => ({ to: "admin@example.com" }), { to: "not an address" }),
  200: skip(SKIP_SMTP),
  503: skip(SKIP_SMTP),
});
operation("/api/admin/users/{id}/second-factors > Remove a user's second factors", {
  200: (t) => missing(`/api/admin/users/${s.alice.id}/second-factors`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/users/${s.alice.id}/second-factors`);
  },
  404: missing(`/api/admin/users/${MISSING_ID}/second-factors`),
  422: missing("/api/admin/users/not-a-number/second-factors"),
  500: skip(SKIP_500),
});
operation("/api/admin/invitations > List the invitations", { 200: asAdmin, 401: wrongAdmin, 422: pageOutOfRange, 500: skip(SKIP_500) });
operation(
  "/api/admin/invitations > Make an invitation",
  adminWrite(null, () => ({ max_uses: 2 }), { max_uses: 0 }),
);
operation("/api/admin/invitations/{id} > Withdraw an invitation", {
  200: (t) => missing(`/api/admin/invitations/${s.invitation.id}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/invitations/${s.invitation.id}`);
  },
  404: missing(`/api/admin/invitations/${MISSING_ID}`),
  422: missing("/api/admin/invitations/not-a-number"),
  500: skip(SKIP_500),
});
operation("/api/admin/oidc-providers > List the OpenID Connect providers", { 200: asAdmin, 401: wrongAdmin, 500: skip(SKIP_500) });
let oidcSeq = 0;
operation(
  "/api/admin/oidc-providers > Add an OpenID Connect provider",
  adminWrite(null, () => ({ slug: `contract-${++oidcSeq}`, label: "Contract", issuer: "https://id.example.com", client_id: "c" }), { slug: "Not A Slug" }),
);
const onOidc = (provider) => ({
  200: (t) => missing(`/api/admin/oidc-providers/${provider().id}`)(t),
  401: (t) => {
    wrongAdmin(t);
    target(t, `/api/admin/oidc-providers/${provider().id}`);
  },
  404: missing(`/api/admin/oidc-providers/${MISSING_ID}`),
  422: missing("/api/admin/oidc-providers/not-a-number"),
  500: skip(SKIP_500),
});
operation(
  "/api/admin/oidc-providers/{id} > Read an OpenID Connect provider",
  onOidc(() => s.oidc),
);
operation("/api/admin/oidc-providers/{id} > Change an OpenID Connect provider", {
  ...adminWrite(
    () => `/api/admin/oidc-providers/${s.oidc.id}`,
    () => ({ label: "Contract changed" }),
    { issuer: "not a url" },
  ),
  404: missing(`/api/admin/oidc-providers/${MISSING_ID}`, { label: "x" }),
});
operation(
  "/api/admin/oidc-providers/{id} > Remove an OpenID Connect provider",
  onOidc(() => s.oidcToDelete),
);

module.exports = { cases };
