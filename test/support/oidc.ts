/**
 * Identity providers for the sign-in tests, on loopback:
 *
 * - `startOidcProvider`: panva's oidc-provider (a certified OpenID Provider), started in this process, with one
 *   confidential client and the given people; its development login and consent pages stand in for a real login.
 *   `driveProvider` goes through them without a browser, keeping the provider's cookies.
 * - `startFakeIssuer`: a small issuer whose token endpoint answers ID tokens the test crafts (a real provider will not
 *   mint a bad one): signed with its key, another key, `alg: none`, expired, for another issuer…
 */
import { createSign, generateKeyPairSync, type KeyObject, randomUUID } from "node:crypto";
import { freePort } from "./processes.ts";

export interface Person {
  email?: string;
  email_verified?: boolean;
  preferred_username?: string;
  name?: string;
  groups?: string[];
}

export interface RunningProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

/** oidc-provider on a loopback port: client `clientId`/`clientSecret` registered for `redirectUris`. */
export async function startOidcProvider(options: { redirectUris: string[]; people: Record<string, Person> }): Promise<RunningProvider> {
  // the provider warns that it is not running under Node and uses its development keys, store and pages: expected here
  const warn = console.warn;
  console.warn = () => {};
  const { default: Provider } = await import("oidc-provider");
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = "image-host";
  const clientSecret = `secret-${randomUUID()}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    async findAccount(_ctx: unknown, id: string) {
      const person = options.people[id];
      if (!person) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...person }) };
    },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["preferred_username", "name"], groups: ["groups"] },
    scopes: ["openid", "email", "profile", "groups", "offline_access"],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: [randomUUID()] },
    // the profile in the UserInfo answer only, as Authelia does by default: the site must read both
    conformIdTokenClaims: true,
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
  } as never);
  const server = provider.listen(port, "127.0.0.1");
  console.warn = warn;
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return {
    issuer,
    clientId,
    clientSecret,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Cookies per origin, for a scripted walk through a provider's pages. */
export class CookieJar {
  private jars = new Map<string, Map<string, string>>();
  header(url: string) {
    const jar = this.jars.get(new URL(url).host);
    return jar?.size ? [...jar].map(([k, v]) => `${k}=${v}`).join("; ") : undefined;
  }
  keep(url: string, res: Response) {
    const host = new URL(url).host;
    const jar = this.jars.get(host) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    this.jars.set(host, jar);
  }
}

/**
 * Walks from the provider's authorization URL through its login (as `login`) and consent pages, and answers the URL
 * it finally sends the browser to (the site's callback, with `code` and `state`, or an `error`).
 */
export async function driveProvider(authorizationUrl: string, login: string, jar = new CookieJar(), stopAt = "/user/oidc/"): Promise<string> {
  let url = authorizationUrl;
  let init: RequestInit = {};
  for (let step = 0; step < 12; step++) {
    const cookie = jar.header(url);
    const res = await fetch(url, { ...init, redirect: "manual", headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) } });
    jar.keep(url, res);
    const location = res.headers.get("location");
    if (location) {
      const next = new URL(location, url).href;
      if (new URL(next).pathname.startsWith(stopAt)) return next;
      url = next;
      init = {};
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`the provider answered ${res.status} with no form at ${url}: ${html.slice(0, 300)}`);
    const body = new URLSearchParams(prompt === "login" ? { prompt, login, password: "any" } : { prompt });
    url = new URL(action.replace(/&amp;/g, "&"), url).href;
    init = { method: "POST", body: body.toString(), headers: { "content-type": "application/x-www-form-urlencoded" } };
  }
  throw new Error("the provider did not send the browser back within 12 steps");
}

const b64url = (value: Buffer | string) => Buffer.from(value).toString("base64url");

/** An RS256 JWT signed with `key` (or an `alg: none` one when `key` is null, with an empty signature). */
export function signJwt(payload: Record<string, unknown>, key: KeyObject | null, kid = "k1"): string {
  if (!key) return `${b64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${b64url(JSON.stringify(payload))}.`;
  const head = `${b64url(JSON.stringify({ alg: "RS256", typ: "JWT", kid }))}.${b64url(JSON.stringify(payload))}`;
  return `${head}.${createSign("RSA-SHA256").update(head).sign(key).toString("base64url")}`;
}

export interface FakeIssuer {
  issuer: string;
  key: KeyObject;
  /** Another key the issuer does not publish. */
  strangerKey: KeyObject;
  /** Builds the next token answer from the authorization request's parameters (nonce, state…) and the token request. */
  mint: (auth: URLSearchParams) => { id_token: string };
  /** The last authorization request's parameters the site sent (via the browser). */
  lastAuth: URLSearchParams | null;
  /** Token requests received (their bodies). */
  tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}

/**
 * A minimal issuer: discovery, JWKS, an authorization endpoint that sends the browser straight back with a code, and
 * a token endpoint that answers `mint(...)`. It checks PKCE itself, as a provider would, so a token answer reaches the
 * site only for a verifier that matches.
 */
export async function startFakeIssuer(): Promise<FakeIssuer> {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const stranger = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const codes = new Map<string, URLSearchParams>();
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req): Promise<Response> {
      const url = new URL(req.url);
      const issuer = fake.issuer;
      if (url.pathname === "/.well-known/openid-configuration") {
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          response_types_supported: ["code"],
          subject_types_supported: ["public"],
          // it even claims to accept "none": the site must still refuse an unsigned token
          id_token_signing_alg_values_supported: ["RS256", "none"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["client_secret_basic"],
        });
      }
      if (url.pathname === "/jwks") return Response.json({ keys: [{ ...publicKey.export({ format: "jwk" }), kid: "k1", alg: "RS256", use: "sig" }] });
      if (url.pathname === "/auth") {
        fake.lastAuth = url.searchParams;
        const code = randomUUID();
        codes.set(code, url.searchParams);
        const back = new URL(url.searchParams.get("redirect_uri")!);
        back.searchParams.set("code", code);
        back.searchParams.set("state", url.searchParams.get("state") ?? "");
        back.searchParams.set("iss", issuer);
        return Response.redirect(back.href, 302);
      }
      if (url.pathname === "/token" && req.method === "POST") {
        const body = new URLSearchParams(await req.text());
        fake.tokenRequests.push(body);
        const auth = codes.get(body.get("code") ?? "");
        if (!auth) return Response.json({ error: "invalid_grant" }, { status: 400 });
        const challenge = new Bun.CryptoHasher("sha256").update(body.get("code_verifier") ?? "").digest("base64url");
        if (challenge !== auth.get("code_challenge")) return Response.json({ error: "invalid_grant", error_description: "PKCE" }, { status: 400 });
        return Response.json({ access_token: randomUUID(), token_type: "Bearer", expires_in: 60, ...fake.mint(auth) });
      }
      return new Response("not found", { status: 404 });
    },
  });
  const fake: FakeIssuer = {
    issuer: `http://127.0.0.1:${server.port}`,
    key: privateKey,
    strangerKey: stranger,
    mint: () => {
      throw new Error("set mint first");
    },
    lastAuth: null,
    tokenRequests: [],
    close: async () => {
      await server.stop(true);
    },
  };
  return fake;
}
