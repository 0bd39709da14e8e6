import { OpenAPIHono } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import type { Deps } from "./deps.ts";
import { AppError } from "./errors.ts";
import { defaultBodyGateLimits, UploadBodyGate } from "./http/body-gate.ts";
import { failure } from "./http/envelope.ts";
import { BodyTooLarge, readBodyWithin } from "./http/multipart.ts";
import { defaultAuthFailureLimits, FailedAuthThrottle } from "./http/throttle.ts";
import { Envelope } from "./http/schemas.ts";
import type { AppEnv } from "./http/types.ts";
import { validationHook } from "./http/validation.ts";
import { observeRequests } from "./http/observe.ts";
import { resolveClientAddress } from "./http/auth.ts";
import { internalActorOf } from "./http/internal-call.ts";
import { logFor } from "./observability/log.ts";
import { registerRoutes } from "./routes/index.ts";
import { CHEVERETO_UPLOAD_PATHS } from "./routes/compat/chevereto-upload.ts";
import { buildServices, type Services } from "./services/index.ts";
import { legacyLocation } from "./services/serving/legacy.ts";

const apiInfo = {
  title: "Image Hosting API",
  version: "1.0.0",
  // SPDX `identifier` is 3.1 only: buildDocument gives the 3.0 document `url` instead
  license: { name: "MIT", identifier: "MIT" },
  description:
    "Upload, list and delete images; read the account profile; list storage strategies; issue temporary upload tokens. " +
    "Every answer is the envelope `{status, message, data}`: check both the HTTP status and `status`. " +
    "Authenticate with `Authorization: Bearer <token>`.\n\n" +
    "Refusals follow one rule. A check of a known caller that fails answers 400, whatever it checks (capacity, quota, frequency, concurrency, " +
    "the temporary-token issuing rate), with `Retry-After` when waiting lifts it. 429 is only for throttles applied before the caller is known: " +
    "failed authentications from an address, and an address's connections and upload bodies before its credential is read. " +
    "503 is for the service-wide caps (uploads being received or images being processed by the whole server) and for a database that does not answer.",
};

/**
 * The OpenAPI document of the app's routes. The 3.0 form is zod-openapi's 3.0 output, which still carries some
 * 3.1-isms in its schemas: scripts/openapi.ts (toOpenAPI30) turns it into valid 3.0.3 for openapi/openapi-3.0.json.
 */
export function buildDocument(app: OpenAPIHono<AppEnv>, serverUrl: string, version: "3.1" | "3.0" = "3.1") {
  app.openAPIRegistry.register("Envelope", Envelope);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "Permanent API token, as `id|raw` or the raw part alone",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "temporaryToken", {
    type: "http",
    scheme: "bearer",
    description:
      "Temporary upload token from POST /images/tokens; valid for POST /upload only, any number of times until it expires or the permanent token that issued it is revoked",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "adminToken", {
    type: "http",
    scheme: "bearer",
    description: "ADMIN_TOKEN of the server",
  });
  const config = {
    openapi: version === "3.1" ? "3.1.0" : "3.0.3",
    info: version === "3.1" ? apiInfo : { ...apiInfo, license: { name: apiInfo.license.name, url: "https://opensource.org/licenses/MIT" } },
    servers: [{ url: serverUrl }],
    tags: [
      { name: "Account", description: "The calling account" },
      { name: "Strategies", description: "Storage strategies of the caller's group" },
      { name: "Images", description: "Upload, list, delete" },
      { name: "Tokens", description: "Temporary upload tokens" },
      { name: "Administration", description: "Site administration with ADMIN_TOKEN (not part of the v1 contract)" },
      { name: "Service", description: "Health" },
      {
        name: "Compatibility",
        description:
          "Upload dialects of other image hosts, for clients that hard-code them (Chevereto 3/4 and ImgBB: POST /api/1/upload). Outside the v1 contract: they answer in those products' own formats.",
      },
    ],
  };
  return version === "3.1" ? app.getOpenAPI31Document(config) : app.getOpenAPIDocument(config);
}

/** The app for a set of dependencies; `services` are built from them unless given (server.ts shares its set with Bun's router). */
export function createApp(deps: Deps, services: Services = buildServices(deps)) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const callApp = (path: string, init: RequestInit, env: unknown) => app.request(path, init, env);
  const authThrottle = new FailedAuthThrottle(deps.config.authFailures ?? defaultAuthFailureLimits);
  const uploadBodies = new UploadBodyGate({ ...defaultBodyGateLimits, ...deps.config.uploadBodies });
  const observe = observeRequests(deps);

  app.use("*", async (c, next) => {
    c.set("deps", deps);
    c.set("services", services);
    c.set("callApp", callApp);
    // first, before anything reads or re-creates the request (which loses its socket): who is on the other end
    const internalActor = internalActorOf(c.env);
    if (internalActor) c.set("internalActor", internalActor);
    c.set("clientAddress", internalActor ? internalActor.ip : resolveClientAddress(c));
    c.set("authThrottle", authThrottle);
    c.set("uploadBodies", uploadBodies);
    return observe(c, next);
  });
  // uploads read their own body with the group's limit; every other API body is small JSON, read whole here
  // within 1 MB and the body deadline, so that no handler waits on a slow sender
  const bodyDeadlineMs = (deps.config.bodyReadTimeoutSeconds ?? 30) * 1000;
  app.use("/api/*", async (c, next) => {
    if (c.req.path === "/api/v1/upload" || CHEVERETO_UPLOAD_PATHS.includes(c.req.path)) return next();
    let bytes: Buffer<ArrayBuffer> | null = null;
    if (c.req.raw.body) {
      try {
        bytes = await readBodyWithin(c.req.raw, { limit: 1024 * 1024, deadlineMs: bodyDeadlineMs });
      } catch (e) {
        if (e instanceof BodyTooLarge) throw new AppError("bad_request", "The request body is larger than 1 MB.");
        throw e;
      }
    }
    if (bytes && bytes.length > 0) c.req.raw = new Request(c.req.raw, { body: bytes });
    else if (c.req.raw.headers.has("content-type")) {
      // no body at all, whatever Content-Type says: an optional JSON body is then absent, a required one missing (422)
      const headers = new Headers(c.req.raw.headers);
      headers.delete("content-type");
      headers.delete("content-length");
      c.req.raw = new Request(c.req.raw.url, { method: c.req.raw.method, headers, signal: c.req.raw.signal });
    }
    return next();
  });

  registerRoutes(app);

  let served: unknown;
  app.get("/api/v1/openapi.json", (c) => c.json((served ??= buildDocument(app, deps.config.baseUrl))));
  app.get("/", (c) => {
    c.header("Vary", "Accept");
    // a browser gets the user center (its sign-in page or dashboard); API clients the JSON below
    if (c.req.header("accept")?.includes("text/html")) return c.redirect("/user/dashboard", 303);
    return c.json({
      status: true,
      message: "success",
      data: {
        name: apiInfo.title,
        api: `${deps.config.baseUrl}/api/v1`,
        docs: `${deps.config.baseUrl}/docs`,
        openapi: `${deps.config.baseUrl}/api/v1/openapi.json`,
      },
    });
  });

  app.notFound(async (c) => {
    // an imported strategy's former address (its legacy_url's path plus the object's): 301 to where it is now
    if (c.req.method === "GET" || c.req.method === "HEAD") {
      const location = await legacyLocation(deps, c.req.path);
      if (location) return c.redirect(location, 301);
    }
    return c.json(failure("Not found."), 404);
  });
  app.onError((err, c) => {
    if (err instanceof AppError && err.status !== 500) {
      return c.json(failure(err.message, err.errors), err.status, err.headers);
    }
    if (err instanceof HTTPException && err.status < 500) {
      const message = err.status === 415 ? "Unsupported Media Type: send application/json." : err.message || "Bad request.";
      return c.json(failure(message), err.status);
    }
    // the client went away (its body or its connection): nobody reads the answer, and it is not a server failure
    if (c.req.raw.signal.aborted) return c.json(failure("The client closed the connection."), 400);
    // a service's own failure (AppError "internal") shows its message; its cause, like any other error, only the log
    const requestId = c.get("requestId");
    logFor(deps).error({ err: err instanceof AppError ? (err.cause ?? err) : err }, `${c.req.method} ${c.req.path} failed`);
    const message = err instanceof AppError ? err.message : "Internal server error.";
    return c.json({ ...failure(message), request_id: requestId }, err instanceof AppError ? err.status : 500);
  });

  return app;
}
