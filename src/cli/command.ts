/** The command table's shape: each entry carries its help text, its arguments and options, and its handler. */
import type { AdminApi } from "./client.ts";
import { usageError } from "./errors.ts";
import type { Output } from "./output.ts";

interface Invocation<A extends string, O extends string> {
  /** The command as typed, e.g. `group set`, for messages. */
  name: string;
  args: Record<A, string>;
  /** The options given, by snake_case name (`--max-file-size-kb` → `max_file_size_kb`). */
  options: Partial<Record<O, string>>;
  /** The admin API client, made on first use: a command refused for its arguments needs neither server nor token. */
  api(): AdminApi;
  out: Output;
  /** Reads a secret from standard input (see Io.readSecret). */
  readSecret(prompt: string, repeat?: string): Promise<string>;
}

export interface Command<A extends string = string, O extends string = string> {
  /** What follows the command words in the help, e.g. `<user> [--group <id>]`. */
  usage: string;
  summary: string;
  /** Lines printed verbatim under the command in the help. */
  notes?: readonly string[];
  /** The positional arguments, in order: the command takes exactly these. */
  args: readonly A[];
  /** The options that take a value, by snake_case name; --json and --help are every command's. */
  options: readonly O[];
  /** The options that take no value (`--dry-run`): given, they read as "true" in `options`. */
  flags?: readonly O[];
  /** Options (among `options`) that may be given more than once: read them with `optionList`. */
  repeatable?: readonly O[];
  run(invocation: Invocation<A, O>): Promise<void>;
}

/** Declares a command (by default without arguments or options); its handler's `args` and `options` are typed by the names declared. */
export const command = <const A extends string = never, const O extends string = never>(
  c: Omit<Command<A, O>, "args" | "options"> & Partial<Pick<Command<A, O>, "args" | "options">>,
): Command<A, O> => ({ args: [], options: [], ...c });

/** A command without arguments that reads from the API and prints what it read. */
export const readCommand = <T>(summary: string, read: (api: AdminApi) => Promise<T>, print: (out: Output, data: T) => void) =>
  command({
    usage: "",
    summary,
    async run({ api, out }) {
      const data = await read(api());
      out.result(data, () => print(out, data));
    },
  });

/** The commands under one first word (`user`, `group`, ...), and the title of their help section. */
export interface CommandGroup {
  title: string;
  commands: Record<string, Command>;
}

/** The command's line in the help and in "usage:" messages, e.g. `user show <user>`. */
export const synopsis = (words: string, c: Command) => [words, c.usage].filter(Boolean).join(" ");

/** How an option is typed: `max_file_size_kb` → `--max-file-size-kb`. */
export const flag = (name: string) => `--${name.replaceAll("_", "-")}`;

/** Every value of a repeatable option, in the order given (they are joined with NUL, which no argument can hold). */
export const optionList = (value: string | undefined): string[] => (value === undefined ? [] : value.split("\0"));

/** The value of an option the command cannot do without. */
export function requireOption<O extends string>(inv: Invocation<string, O>, name: O, placeholder: string): string {
  const value = inv.options[name];
  if (value === undefined) throw usageError(`${inv.name} needs ${flag(name)} ${placeholder}`);
  return value;
}
