/**
 * `database move`: a local operation on DATA_DIR and DATABASE_URL (not a call to the admin API). The work is in
 * services/backup/move.ts.
 */
import { parseEnv } from "../../env.ts";
import { BackupError, moveDatabase } from "../../services/backup/index.ts";
import { command, type CommandGroup } from "../command.ts";
import { CliError } from "../errors.ts";

export const databaseCommands: CommandGroup = {
  title: "The database (local operations on DATA_DIR):",
  commands: {
    move: command({
      usage: "",
      summary: "Copy DATA_DIR's embedded database into the empty PostgreSQL at DATABASE_URL (server stopped)",
      notes: [
        "    DATABASE_URL=postgres://… bun run cli database move; then start the server with that DATABASE_URL and the same DATA_DIR.",
        "    The copy keeps the database's identity, so its storages stay its own (nothing is quarantined); DATA_DIR/postgres is left as it was.",
      ],
      async run({ out }) {
        const parsed = parseEnv();
        if ("problems" in parsed)
          throw new CliError(
            "invalid environment",
            parsed.problems.map((line) => `  ${line}`),
          );
        const env = parsed.env;
        if (!env.DATABASE_URL) {
          throw new CliError("DATABASE_URL is not set: name the empty PostgreSQL database to move into", [
            "DATABASE_URL=postgres://user:password@host:5432/imghost bun run cli database move",
          ]);
        }
        let summary;
        try {
          summary = await moveDatabase({ dataDir: env.DATA_DIR, target: env.DATABASE_URL });
        } catch (e) {
          if (e instanceof BackupError) throw new CliError(e.message, e.details);
          throw e;
        }
        out.result(summary, () => {
          out.line(
            `Moved ${summary.records} records in ${summary.tables} tables from the embedded database of ${summary.data_dir} into ${summary.target} ` +
              `(database ${summary.database_id}) in ${(summary.duration_ms / 1000).toFixed(1)} s.`,
          );
          out.line(
            `Start the server with this DATABASE_URL and DATA_DIR=${summary.data_dir}. ${summary.data_dir}/postgres is no longer used: remove it once the server works.`,
          );
          for (const warning of summary.warnings) out.line(`Warning: ${warning}`);
        });
      },
    }),
  },
};
