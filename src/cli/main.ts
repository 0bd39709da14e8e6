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
        group ? `error: unknown command '${words.join(" ")}' (${word} takes: ${Object.keys(group.commands).join(", ")})` : `error: unknown command '${word}'`,
      );
      io.err("");
      io.err(USAGE);
      return 1;
    }
    const name = `${word} ${action}`;
    const { args, options, json } = parseCommandArgs(argv, name, cmd);
    let api: AdminApi | undefined;
    const readSecret = (prompt: string, repeat?: string) => {
      if (!io.readSecret) throw new CliError(`${name} reads from standard input, and there is none here`);
      return io.readSecret(prompt, repeat);
    };
    await cmd.run({ name, args, options, api: () => (api ??= connect(env)), out: new Output(io, json), readSecret });
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

/**
 * A terminal: the prompt on stderr and the keys read without echo, twice when `repeat` is given (they must agree);
 * a pipe or a file: its first line.
 */
async function readSecretFromStdin(prompt: string, repeat?: string): Promise<string> {
  if (!process.stdin.isTTY) {
    const text = await new Response(Bun.stdin.stream()).text();
    return text.split(/\r?\n/)[0] ?? "";
  }
  const first = await readKeys(prompt);
  if (repeat !== undefined && (await readKeys(repeat)) !== first) throw new CliError("the two entries differ: nothing was changed");
  return first;
}

async function readKeys(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding("utf8");
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = "";
      const onData = (chunk: string) => {
        for (const ch of chunk) {
          if (ch === "\r" || ch === "\n" || ch === "\u0004") {
            stdin.off("data", onData);
            return resolve(typed);
          }
          if (ch === "\u0003") {
            stdin.off("data", onData);
            return reject(new CliError("interrupted"));
          }
          if (ch === "\u007f" || ch === "\b") typed = typed.slice(0, -1);
          else typed += ch;
        }
      };
      stdin.on("data", onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write("\n");
  }
}

/** Runs the CLI on this process's arguments and environment, and sets its exit code. */
export async function runAsProcess() {
  process.exitCode = await main(process.argv.slice(2), process.env, {
    out: (s) => console.log(s),
    err: (s) => console.error(s),
    readSecret: readSecretFromStdin,
  });
}

if (import.meta.main) await runAsProcess();
