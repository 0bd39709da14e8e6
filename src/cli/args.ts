/**
 * The command line, read with node:util's parseArgs. Every option but --json, --help and a command's
 * flags takes a value (`--flag value` or `--flag=value`), `--` ends the options, and `--max_file_size_kb` is
 * accepted for `--max-file-size-kb`. Reading happens in two steps: the command words first, then
 * a strict parse with that command's own options.
 */
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { flag, synopsis, type Command } from "./command.ts";
import { usageError } from "./errors.ts";

const EVERY_COMMAND: ParseArgsOptionsConfig = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } };

const withValues = (names: Iterable<string>): ParseArgsOptionsConfig => Object.fromEntries([...names].map((name) => [flag(name).slice(2), { type: "string" }]));

const asFlags = (names: Iterable<string>): ParseArgsOptionsConfig => Object.fromEntries([...names].map((name) => [flag(name).slice(2), { type: "boolean" }]));

/** The same arguments with option names spelled with dashes (values and arguments after `--` untouched). */
function dashedOptionNames(argv: string[]): string[] {
  const end = argv.indexOf("--");
  return argv.map((arg, i) => ((end !== -1 && i > end) || !arg.startsWith("--") ? arg : arg.replace(/^--[^=]*/, (name) => name.replaceAll("_", "-"))));
}

/**
 * The command words (the first two positionals) and --help, read before the command is known.
 * Every command's options are declared so their values are not taken for words; this step reports
 * nothing: errors wait for the strict parse of the command's arguments.
 */
export function scanCommandLine(argv: string[], everyOption: Iterable<string>): { words: string[]; help: boolean } {
  const { values, positionals } = parseArgs({
    args: dashedOptionNames(argv),
    options: { ...EVERY_COMMAND, ...withValues(everyOption) },
    strict: false,
    allowPositionals: true,
  });
  return { words: positionals.slice(0, 2), help: values.help === true };
}

interface CommandArgs {
  args: Record<string, string>;
  /** By snake_case name */
  options: Record<string, string>;
  json: boolean;
}

/** Reads one command's arguments: its own options only, each once and with a value, and exactly its positionals. */
export function parseCommandArgs(argv: string[], words: string, cmd: Command): CommandArgs {
  const args = dashedOptionNames(argv);
  const options = { ...EVERY_COMMAND, ...withValues(cmd.options), ...asFlags(cmd.flags ?? []) };
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true, tokens: true });
  } catch (e) {
    throw usageError(ourMessageFor(argv, args, options, words) ?? (e as Error).message);
  }

  const given = new Map<string, string>();
  const repeatable = new Set((cmd.repeatable ?? []).map((name) => flag(name).slice(2)));
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || Object.hasOwn(EVERY_COMMAND, token.name)) continue;
    const value = token.value ?? "true";
    if (given.has(token.name) && !repeatable.has(token.name)) throw usageError(`option --${token.name} given twice`);
    given.set(token.name, given.has(token.name) ? `${given.get(token.name)}\0${value}` : value);
  }

  const positionals = parsed.positionals.slice(2);
  if (positionals.length !== cmd.args.length) {
    throw usageError(`${positionals.length < cmd.args.length ? "missing" : "too many"} arguments; usage: ${synopsis(words, cmd)}`);
  }
  return {
    args: Object.fromEntries(cmd.args.map((name, i) => [name, positionals[i]!])),
    options: Object.fromEntries([...given].map(([name, value]) => [name.replaceAll("-", "_"), value])),
    json: parsed.values.json === true,
  };
}

/**
 * The message for what the strict parse refused, when it is an unknown option or a missing value
 * (a value never starts with `--`); otherwise parseArgs's own message stands.
 */
function ourMessageFor(argv: string[], args: string[], options: ParseArgsOptionsConfig, words: string): string | undefined {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (!Object.hasOwn(options, token.name)) return `unknown option ${token.rawName} for '${words}'`;
    const missing = token.value === undefined || (!token.inlineValue && token.value.startsWith("--"));
    if (options[token.name]!.type === "string" && missing) return `option ${argv[token.index]} needs a value`;
  }
  return undefined;
}
