/**
 * No secret in a log line: what the service logs during a whole test run is read back at the end (the preload's
 * afterAll) and searched for secrets — by their shape (every token, session secret and admin token the service
 * makes is random base64url of a known length; hashes of secrets are 64 hex digits; password hashes start with
 * `$argon2`), and by value (the passwords, S3 keys and admin tokens the tests use, read from their sources).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface Finding {
  line: number;
  what: string;
  excerpt: string;
}

const SHAPES: { what: string; pattern: RegExp; keep?: (match: string) => boolean }[] = [
  // randomToken(30) (API tokens) and randomToken(32) (sessions, generated admin tokens); all-hex runs are SHA-1s
  { what: "a token", pattern: /(?<![A-Za-z0-9_-])(?:[A-Za-z0-9_-]{40}|[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g, keep: (m) => !/^[0-9a-f]+$/.test(m) },
  { what: "a token as id|raw", pattern: /\b\d+\|[A-Za-z0-9_-]{20,}/g },
  { what: "a SHA-256 of a secret", pattern: /(?<![0-9a-fA-F])[0-9a-f]{64}(?![0-9a-fA-F])/g },
  { what: "a password hash", pattern: /\$argon2(id|i|d)\$/g },
  { what: "an Authorization header", pattern: /Bearer\s+\S{8,}/gi },
];

/** The secret values written in the test sources: passwords, S3 keys, admin and metrics tokens. */
export function secretLiterals(testDir: string): string[] {
  const assignment =
    /(?:password|PASSWORD|secret_access_key|access_key_id|secretAccessKey|accessKeyId|ADMIN_TOKEN|adminToken|METRICS_TOKEN|metricsToken)\w*["']?\s*[:=]\s*["'`]([^"'`${}\n]{6,})["'`]/g;
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== "artifacts" && entry.name !== "node_modules") walk(path);
      } else if (/\.tsx?$/.test(entry.name)) {
        for (const m of readFileSync(path, "utf8").matchAll(assignment)) found.add(m[1]!);
      }
    }
  };
  walk(testDir);
  return [...found];
}

export function findSecrets(text: string, literals: string[]): Finding[] {
  const findings: Finding[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    const report = (what: string, at: number) => findings.push({ line: i + 1, what, excerpt: line.slice(Math.max(0, at - 60), at + 80) });
    for (const { what, pattern, keep } of SHAPES) {
      for (const m of line.matchAll(pattern)) if (!keep || keep(m[0])) report(what, m.index!);
    }
    for (const literal of literals) {
      const at = line.indexOf(literal);
      if (at >= 0) report(`the test secret ${JSON.stringify(literal)}`, at);
    }
  });
  return findings;
}
