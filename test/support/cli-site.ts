/** A test context served on a loopback port, and the CLI run in-process against it as an operator runs it. */
import { main } from "../../src/cli/index.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "./harness.ts";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliSite {
  ctx: TestContext;
  baseUrl: string;
  /** `bun run cli ARGS`, with BASE_URL and ADMIN_TOKEN pointing at this site unless `env` says otherwise; `stdin` answers a secret prompt. */
  cli(args: string[], options?: { env?: Record<string, string | undefined>; stdin?: string }): Promise<CliRun>;
  close(): Promise<void>;
}

export async function startCliSite(): Promise<CliSite> {
  const ctx = await createTestContext();
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
  const baseUrl = `http://127.0.0.1:${server.port}`;
  return {
    ctx,
    baseUrl,
    async cli(args, { env = { BASE_URL: baseUrl, ADMIN_TOKEN }, stdin } = {}) {
      const out: string[] = [];
      const err: string[] = [];
      const readSecret = stdin === undefined ? undefined : async () => stdin;
      const code = await main(args, env, { out: (s) => out.push(s), err: (s) => err.push(s), readSecret });
      return { code, stdout: out.join("\n"), stderr: err.join("\n") };
    },
    async close() {
      await server.stop(true);
      await ctx.close();
    },
  };
}
