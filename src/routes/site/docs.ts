import type { OpenAPIHono } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import type { MiddlewareHandler } from "hono";
import { currentSettings } from "../../http/auth.ts";
import type { AppEnv } from "../../http/types.ts";
import { identityOf } from "../../web/site.ts";

// @scalar/api-reference's standalone bundle, vendored by `bun run vendor:scalar` (docs/decisions/vendored-scalar-bundle.md)
const scalarBundle = Bun.file(new URL("../../web/assets/vendor/scalar/standalone.js", import.meta.url));
const favicon = Bun.file(new URL("./favicon.svg", import.meta.url));

/**
 * Where Scalar would reach its own services (the agent, MCP generation, sharing and deploying upload the whole
 * document there). Every feature that uses them is turned off below; should one come back with an upgrade, it
 * lands on this server's 404 instead of sending the spec to a third party. Same origin, so never a CORS request.
 */
const noExternalService = "/docs/no-external-services";

/**
 * The API reference at /docs, rendered by Scalar from the bundle this server serves. The page talks to no
 * other host whatever a visitor clicks: no CDN, no web fonts, no request proxy, and Scalar's third-party
 * features (Ask AI, Generate MCP, the developer tools' Share/Deploy, "Open API Client" on client.scalar.com)
 * turned off. Its own client ("Test Request") still sends to the servers the spec names, from the browser.
 * Options: @scalar/types dist/api-reference/{base-configuration,api-reference-configuration,source-configuration}.d.ts.
 */
const referenceFor = (site: { name: string; favicon: string }) =>
  Scalar<AppEnv>({
    url: "/api/v1/openapi.json",
    cdn: "/docs/scalar.js",
    // the site's own name (settings, docs/decisions/pages-design-system.md)
    pageTitle: `${site.name} API`,
    favicon: site.favicon,
    // no web fonts from fonts.scalar.com
    withDefaultFonts: false,
    // "Ask AI": a chat with Scalar's agent that uploads the document (shown by default on localhost)
    agent: { disabled: true },
    // "Generate MCP" / VS Code / Cursor: posts the whole document to api.scalar.com through proxy.scalar.com
    mcp: { disabled: true },
    // the localhost toolbar's Share and Deploy upload the document to api.scalar.com too
    showDeveloperTools: "never",
    // "Open API Client" links to client.scalar.com with the spec's address; "Test Request" stays
    hideClientButton: true,
    // requests from the client go straight to the server, never through a proxy ("" = none, whatever the layout)
    proxyUrl: "",
    telemetry: false,
    externalUrls: { dashboardUrl: noExternalService, registryUrl: noExternalService, proxyUrl: noExternalService, apiBaseUrl: noExternalService },
    // the sidebar's "Powered by Scalar" is a link to www.scalar.com: the only way off the page left in its chrome
    customCss: '.darklight-reference a[href^="http"] { display: none; }',
  });

/** One page handler per name and icon of the site (they change only when an administrator changes them). */
const references = new Map<string, ReturnType<typeof referenceFor>>();
const reference: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { site } = identityOf(await currentSettings(c.get("deps")));
  const key = `${site.name}\n${site.favicon}`;
  let handler = references.get(key);
  if (!handler) {
    if (references.size > 20) references.clear();
    handler = referenceFor(site);
    references.set(key, handler);
  }
  return handler(c, next);
};

export function register(app: OpenAPIHono<AppEnv>) {
  app.get(
    "/docs/scalar.js",
    () =>
      new Response(scalarBundle, {
        headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=3600" },
      }),
  );
  app.get(
    "/docs",
    async (c, next) => {
      await next();
      // links a visitor follows out of the page (a status code's MDN page in the client) carry no Referer
      c.header("Referrer-Policy", "no-referrer");
    },
    reference,
  );
  for (const path of ["/favicon.svg", "/favicon.ico"]) {
    app.get(path, () => new Response(favicon, { headers: { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" } }));
  }
}
