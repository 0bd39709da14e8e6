/** A failure to report as `error: <message>`, then its detail lines; the CLI exits 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
    /** Follow with a pointer to --help: the command line itself was wrong. */
    readonly showUsage = false,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(message, [], true);
