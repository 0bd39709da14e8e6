import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EMBEDDED_MAJOR } from "../../src/db/embedded/index.ts";
import { envShape, otherVariableDocs, parseEnv } from "../../src/env.ts";
import { REPO_ROOT } from "../support/processes.ts";

/**
 * The compose files, read as Compose would merge them (no container runs here: `podman run` is refused on these
 * machines, and no compose tool or image registry is at hand). Checked: they parse; every variable given to the app
 * is one src/env.ts knows, and the values, with their defaults, pass its validation; what is mounted, depended on and
 * configured exists; the PostgreSQL container is the embedded database's major version; Garage's configuration
 * parses. The image itself is built and run by test/ops/container.test.ts.
 */

type Service = {
  build?: { context: string; dockerfile: string };
  image?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  configs?: { source: string; target: string }[];
  stop_grace_period?: string;
  healthcheck?: { test: string[] };
  ports?: string[];
};
type Compose = { services: Record<string, Service>; volumes?: Record<string, unknown>; configs?: Record<string, { content: string }> };

const read = (name: string) => Bun.YAML.parse(readFileSync(join(REPO_ROOT, name), "utf8")) as Compose;
const files = {
  single: ["compose.yaml"],
  postgres: ["compose.yaml", "compose.postgres.yaml"],
  s3: ["compose.yaml", "compose.postgres.yaml", "compose.s3.yaml"],
};

/** Compose's merge of several files (`-f a -f b`): services and their maps merged key by key, lists appended. */
function merge(names: string[]): Compose {
  const out: Compose = { services: {}, volumes: {}, configs: {} };
  for (const name of names) {
    const c = read(name);
    for (const [svc, def] of Object.entries(c.services)) {
      const into = (out.services[svc] ??= {}) as Record<string, unknown>;
      for (const [k, v] of Object.entries(def)) {
        if (Array.isArray(v)) into[k] = [...((into[k] as unknown[]) ?? []), ...v];
        else if (v && typeof v === "object") into[k] = { ...(into[k] as object), ...v };
        else into[k] = v;
      }
    }
    Object.assign(out.volumes!, c.volumes ?? {});
    Object.assign(out.configs!, c.configs ?? {});
  }
  return out;
}

/** `${VAR:-default}` → default; `${VAR:?message}` → `sample` (the value a user must give); `${VAR}` → sample. */
function interpolate(value: string, sample = "0123456789abcdef0123456789abcdef"): string {
  return value.replace(/\$\{(\w+)(?::?([-?])([^}]*))?\}/g, (_m, _name, op, arg) => (op === "-" ? arg : sample));
}

const known = new Set([...Object.keys(envShape.shape), ...Object.keys(otherVariableDocs)]);
const seconds = (d: string) => {
  const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(d);
  return m ? Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0) : NaN;
};

describe("compose files", () => {
  for (const [variant, names] of Object.entries(files)) {
    test(`${variant}: ${names.join(" + ")}`, () => {
      const c = merge(names);
      const app = c.services.app!;
      expect(app.build).toEqual({ context: ".", dockerfile: "Containerfile" });
      expect(existsSync(join(REPO_ROOT, app.build!.dockerfile))).toBe(true);

      // the app's environment: names src/env.ts reads, values it accepts (defaults and a sample secret filled in)
      const env = Object.fromEntries(Object.entries(app.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
      expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
      const parsed = parseEnv({ ...env, DATA_DIR: "/data" });
      expect("problems" in parsed ? parsed.problems : []).toEqual([]);
      expect(Boolean(env.DATABASE_URL)).toBe(variant !== "single");

      // /data, the Containerfile's VOLUME, is a named volume in every variant
      expect(app.volumes).toContain("data:/data");
      expect(readFileSync(join(REPO_ROOT, "Containerfile"), "utf8")).toMatch(/^VOLUME \/data$/m);
      // longer than the upload read timeout (60 s by default): in-flight uploads finish on stop
      expect(seconds(app.stop_grace_period!)).toBeGreaterThan(60);

      // every named volume mounted is declared; every service depended on or config used exists
      for (const [name, svc] of Object.entries(c.services)) {
        for (const v of svc.volumes ?? []) {
          const source = v.split(":")[0]!;
          if (!source.startsWith(".") && !source.startsWith("/")) expect(Object.keys(c.volumes!)).toContain(source);
        }
        for (const dep of Object.keys(svc.depends_on ?? {})) expect(Object.keys(c.services)).toContain(dep);
        for (const cfg of svc.configs ?? []) expect(Object.keys(c.configs!)).toContain(cfg.source);
        expect(svc.image ?? svc.build, name).toBeDefined();
      }
    });
  }

  test("the PostgreSQL container: the embedded database's major version, a health check the app waits for", () => {
    const c = merge(files.postgres);
    const pg = c.services.postgres!;
    expect(pg.image).toBe(`docker.io/library/postgres:${EMBEDDED_MAJOR}`);
    expect(pg.healthcheck!.test).toContain("pg_isready");
    expect(c.services.app!.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    // the URL's user and database are the container's
    const url = new URL(interpolate(c.services.app!.environment!.DATABASE_URL!));
    expect(url.hostname).toBe("postgres");
    expect(url.username).toBe(pg.environment!.POSTGRES_USER);
    expect(url.pathname).toBe(`/${pg.environment!.POSTGRES_DB}`);
  });

  test("Garage: its configuration parses and names the S3 API and web ports the compose file publishes", () => {
    const c = merge(files.s3);
    const garage = c.services.garage!;
    const toml = Bun.TOML.parse(c.configs![garage.configs![0]!.source]!.content) as {
      replication_factor: number;
      s3_api: { api_bind_addr: string; s3_region: string };
      s3_web: { bind_addr: string; root_domain: string };
    };
    expect(garage.configs![0]!.target).toBe("/etc/garage.toml");
    expect(toml.replication_factor).toBe(1);
    expect(toml.s3_api.api_bind_addr).toEndWith(":3900");
    expect(toml.s3_web.bind_addr).toEndWith(":3902");
    expect(garage.ports).toEqual(["3900:3900", "3902:3902"]);
    // the region the docs give the strategy is the one Garage answers to
    expect(readFileSync(join(REPO_ROOT, "docs/deployment.md"), "utf8").includes(`"region":"${toml.s3_api.s3_region}"`)).toBe(true);
  });
});
