/**
 * The one way the tests (and the contract test) run the server as a process of its own: a free port, the process
 * spawned with a known environment, its wait for /health, its stop. Tests that run the app in-process use harness.ts.
 */
import type { Subprocess } from "bun";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** This checkout's root: the default working directory of a server started here. */
export const REPO_ROOT = join(import.meta.dir, "..", "..");

/** A TCP port free on `hostname` right now (taken and released at once). */
export async function freePort(hostname = "127.0.0.1"): Promise<number> {
  const probe = Bun.serve({ port: 0, hostname, fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}

/** Where a server's standard output or error goes: kept to be read ("pipe"), this process's own, nowhere, or a file. */
export type Output = "pipe" | "inherit" | "ignore" | { file: string };
type Stdio<O extends Output> = O extends "pipe" ? "pipe" : "ignore";
/** A server process; its stdout and stderr are streams exactly when they were asked for as "pipe". */
export type ServerProcess<Out extends Output = "ignore", Err extends Output = "pipe"> = Subprocess<"ignore", Stdio<Out>, Stdio<Err>>;

export interface ServerOptions<Out extends Output = "ignore", Err extends Output = "pipe"> {
  /** Variables over the inherited environment; `undefined` removes one. */
  env?: Record<string, string | undefined>;
  /**
   * true (the default): this process's environment less DATABASE_URL (a test names its database itself when it wants
   * one), then `env`. false: `env` alone, as a user's shell would have it.
   */
  inherit?: boolean;
  /** The checkout whose server runs (its working directory): this one by default. */
  cwd?: string;
  /** The command: `bun run src/server.ts` by default (e.g. `bun run server` as the README says, or wrapped to run as another user). */
  argv?: string[];
  /** "ignore" by default. */
  stdout?: Out;
  /** "pipe" by default: what a failed start printed is in the error. */
  stderr?: Err;
}

const outputs = new WeakMap<Subprocess, { stdout: Output; stderr: Output }>();

const stdioOf = (o: Output) => (typeof o === "string" ? o : Bun.file(o.file));

/** Spawns the server and returns at once (a test that expects a refusal waits for its exit). */
export function spawnServer<Out extends Output = "ignore", Err extends Output = "pipe">(options: ServerOptions<Out, Err> = {}): ServerProcess<Out, Err> {
  const env: Record<string, string | undefined> = options.inherit === false ? {} : { ...process.env, DATABASE_URL: undefined };
  Object.assign(env, options.env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const stdout: Output = options.stdout ?? "ignore";
  const stderr: Output = options.stderr ?? "pipe";
  const proc = Bun.spawn(options.argv ?? ["bun", "run", "src/server.ts"], {
    cwd: options.cwd ?? REPO_ROOT,
    env: env as Record<string, string>,
    stdin: "ignore",
    stdout: stdioOf(stdout),
    stderr: stdioOf(stderr),
  });
  outputs.set(proc, { stdout, stderr });
  return proc as unknown as ServerProcess<Out, Err>;
}

/** What the server wrote to its piped or file outputs, for an error message (a pipe is read only once the process exited). */
async function printed(proc: Subprocess): Promise<string> {
  const where = outputs.get(proc);
  if (!where) return "";
  const parts: string[] = [];
  const files = new Set<string>();
  for (const name of ["stdout", "stderr"] as const) {
    const o = where[name];
    if (o === "pipe" && proc.exitCode !== null) parts.push(await new Response(proc[name] as ReadableStream<Uint8Array>).text());
    else if (typeof o === "object" && !files.has(o.file) && existsSync(o.file)) {
      files.add(o.file);
      parts.push(readFileSync(o.file, "utf8"));
    }
  }
  return parts.join("\n").slice(-4000);
}

/** Resolves once `${url}/health` answers 200; throws (with what the server printed) when it exits first or `timeoutMs` passes, killing it then. */
export async function waitHealthy(proc: Subprocess, url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the server exited with ${proc.exitCode}: ${await printed(proc)}`);
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
    if (res?.status === 200) return;
    await Bun.sleep(100);
  }
  proc.kill("SIGKILL");
  await proc.exited;
  throw new Error(`the server did not become healthy within ${timeoutMs / 1000} s: ${await printed(proc)}`);
}

/**
 * Spawns the server (spawnServer) and resolves once it answers 200 on /health, at `url`, else at the environment's
 * BASE_URL, else at http://127.0.0.1:PORT.
 */
export async function startServer<Out extends Output = "ignore", Err extends Output = "pipe">(
  options: ServerOptions<Out, Err> & { url?: string; timeoutMs?: number },
): Promise<ServerProcess<Out, Err>> {
  const url = options.url ?? options.env?.BASE_URL ?? `http://127.0.0.1:${options.env?.PORT}`;
  if (!options.url && !options.env?.BASE_URL && !options.env?.PORT) throw new Error("startServer: name the server's url, BASE_URL or PORT");
  const proc = spawnServer(options);
  await waitHealthy(proc, url, options.timeoutMs);
  return proc;
}

/** SIGTERM (or `signal`), then SIGKILL when the server has not exited within `graceMs`; resolves with its exit code. */
export async function stopServer(proc: Subprocess, signal: "SIGTERM" | "SIGKILL" = "SIGTERM", graceMs = 10_000): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  proc.kill(signal);
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(graceMs).then(() => false)]);
  if (!exited) {
    proc.kill("SIGKILL");
    await proc.exited;
  }
  return proc.exitCode;
}
