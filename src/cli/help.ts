/** The --help text, generated from the command table that dispatches. */
import { synopsis, type CommandGroup } from "./command.ts";

const DESCRIPTION_COLUMN = 35;

/** `  left   description`, or the description on a line of its own when `left` is too long. */
const row = (left: string, description: string) =>
  left.length < DESCRIPTION_COLUMN ? `  ${left.padEnd(DESCRIPTION_COLUMN)}${description}` : `  ${left}\n${" ".repeat(DESCRIPTION_COLUMN + 2)}${description}`;

const ENVIRONMENT = `Environment:
  BASE_URL      Server address (default http://localhost:$PORT, PORT defaulting to 3000)
  ADMIN_TOKEN   Admin token (default: the contents of $DATA_DIR/admin-token, DATA_DIR defaulting to ./data)`;

export function usage(groups: Record<string, CommandGroup>): string {
  const sections = Object.entries(groups).map(([word, group]) =>
    [group.title, ...Object.entries(group.commands).flatMap(([action, c]) => [row(synopsis(`${word} ${action}`, c), c.summary), ...(c.notes ?? [])])].join(
      "\n",
    ),
  );
  return [
    "Usage: bun run cli <command> [arguments] [--json]",
    ...sections,
    ["Other:", row("help, --help", "Show this help")].join("\n"),
    ["Options:", row("--json", "Print the raw response data as JSON")].join("\n"),
    ENVIRONMENT,
  ].join("\n\n");
}
