/**
 * LOG_FORMAT=pretty: a readable line, the message then only what it does not already say, as
 * key=value — never every field again as JSON. The JSON format keeps every field.
 */
import { describe, expect, test } from "bun:test";
import { createLogger, prettyMessage } from "../../src/observability/log.ts";

function capture(format: "pretty" | "json") {
  const lines: string[] = [];
  const log = createLogger({ format, level: "info", destination: { write: (s: string) => void lines.push(s) } });
  return { log, lines };
}

const TIME = String.raw`\[\d\d:\d\d:\d\d\.\d{3}\]`;

/** What the request middleware logs for one answered request (src/http/observe.ts), under its request's child logger. */
const requestFields = {
  method: "POST",
  route: "/api/v1/upload",
  status: 200,
  duration_ms: 41.7,
  bytes_in: 183_004,
  bytes_out: 1_022,
  caller: 7,
  client: "203.0.113.9",
};

describe("pretty log lines", () => {
  test("a request line: method route status duration request_id on one line, nothing repeated as JSON", () => {
    const { log, lines } = capture("pretty");
    log.child({ request_id: "5d0c2f1e" }).info(requestFields, "POST /api/v1/upload 200 41.7 ms");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^${TIME} INFO: POST /api/v1/upload 200 41\\.7 ms request_id=5d0c2f1e caller=7\\n$`));
    expect(lines[0]).not.toContain("{");
    // each value once: the message says the method, route, status and duration
    for (const said of ["POST", "/api/v1/upload", "41.7"]) expect(lines[0]!.split(said)).toHaveLength(2);
  });

  test("a request's line: GET /health with a request id", () => {
    const { log, lines } = capture("pretty");
    log.info({ request_id: "r1", status: 200 }, "GET /health 200 1.2 ms");
    expect(lines.join("")).toMatch(new RegExp(`^${TIME} INFO: GET /health 200 1\\.2 ms request_id=r1\\n$`));
  });

  test("other lines: fields the message does not say as key=value (quoted when they hold spaces); errors with their stack", () => {
    const { log, lines } = capture("pretty");
    log.info({ dir: "/srv/data/postgres", created: true, start_ms: 612 }, "Embedded PostgreSQL created and started in /srv/data/postgres (612 ms).");
    log.warn({ strategy: "Archive S3", attempts: 3 }, "storage probe failed");
    log.error({ err: Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" }) }, "sweep failed");
    expect(lines[0]).toMatch(new RegExp(`^${TIME} INFO: Embedded PostgreSQL created and started in /srv/data/postgres \\(612 ms\\)\\. created=true\\n$`));
    expect(lines[1]).toMatch(new RegExp(`^${TIME} WARN: storage probe failed strategy="Archive S3" attempts=3\\n$`));
    const [first, ...stack] = lines[2]!.trimEnd().split("\n");
    expect(first).toMatch(new RegExp(`^${TIME} ERROR: sweep failed err="Error: connection refused \\(ECONNREFUSED\\)"$`));
    expect(stack.length).toBeGreaterThan(0);
    for (const frame of stack) expect(frame).toMatch(/^ {4}at /);
  });

  test("secrets stay redacted in the pretty form", () => {
    const { log, lines } = capture("pretty");
    log.info({ password: "hunter2-hunter2", token: "1|abcdef" }, "signed in");
    expect(lines[0]).not.toContain("hunter2");
    expect(lines[0]).not.toContain("abcdef");
    expect(lines[0]).toContain("password=[redacted] token=[redacted]");
  });

  test("the JSON format keeps every field", () => {
    const { log, lines } = capture("json");
    log.child({ request_id: "5d0c2f1e" }).info(requestFields, "POST /api/v1/upload 200 41.7 ms");
    expect(JSON.parse(lines[0]!)).toMatchObject({ ...requestFields, request_id: "5d0c2f1e", level: "info", msg: "POST /api/v1/upload 200 41.7 ms" });
  });

  test("prettyMessage on its own: null and absent fields are left out", () => {
    expect(prettyMessage({ level: "info", msg: "GET / 200 1 ms", caller: null, user_id: undefined, request_id: "x" })).toBe("GET / 200 1 ms request_id=x");
  });
});
