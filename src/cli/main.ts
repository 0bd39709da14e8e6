/**
 * Administration CLI: a typed client of the server's admin API (/api/admin/*).
 *
 *   bun run cli <command> [args] [--json]
 */
import { parseCommandArgs, scanCommandLine } from "./args.ts";
import { connect, type AdminApi, type Env } from "./client.ts";
import { commandGroups } from "./commands/index.ts";
import { CliError } from "./errors.ts";
import { usage } from "./help.ts";
import { Output, type Io } from "./output.ts";

export type { Env, Io };

const USAGE = usage(commandGroups);

const EVERY_OPTION = new Set(Object.values(commandGroups).flatMap((group) => Object.values(group.commands).flatMap((c) => c.options)));

/** Runs one CLI invocation; returns the exit code. */
export async function main(argv: string[], env: Env, io: Io): Promise<number> {
  try {
    const { words, help } = scanCommandLine(argv, EVERY_OPTION);
    const [word, action] = words;
    if (help || word === undefined || word === "help") {
      io.out(USAGE);
      return 0;
    }
    const group = Object.hasOwn(commandGroups, word) ? commandGroups[word] : undefined;
    const cmd = group && action !== undefined && Object.hasOwn(group.commands, action) ? group.commands[action] : undefined;
    if (!cmd) {
      io.err(
        group
          ? `error: unknown command '${words.join(" ")}' (${word} takes: ${Object.keys(group.commands).join(", ")})`
          : `error: unknown command '${word}'`,
      );
      io.err("");
      io.err(USAGE);
      return 1;
    }
    const name = `${word} ${action}`;
    const { args, options, json } = parseCommandArgs(argv, name, cmd);
    let api: AdminApi | undefined;
    await cmd.run({ name, args, options, api: () => (api ??= connect(env)), out: new Output(io, json) });
    return 0;
  } catch (e) {
    if (!(e instanceof CliError)) {
      io.err(`error: unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      return 1;
    }
    io.err(`error: ${e.message}`);
    for (const line of e.details) io.err(line);
    if (e.showUsage) io.err("Run 'bun run cli --help' for the list of commands.");
    return 1;
  }
}

/** Runs the CLI on this process's arguments and environment, and sets its exit code. */
export async function runAsProcess() {
  process.exitCode = await main(process.argv.slice(2), process.env, {
    out: (s) => console.log(s),
    err: (s) => console.error(s),
  });
}

if (import.meta.main) await runAsProcess();
