/**
 * `backup create` / `backup restore`: local operations on DATA_DIR (the embedded database and the local uploads),
 * not calls to the admin API. The work is in services/backup/.
 */
import { type Env, parseEnv } from "../../env.ts";
import { BackupError, createBackup, restoreBackup } from "../../services/backup/index.ts";
import { command, type CommandGroup, optionList } from "../command.ts";
import { CliError } from "../errors.ts";

const RECIPE = "On PostgreSQL (DATABASE_URL) back up with pg_dump and the storage's own tools: see docs/backups.md.";

/** DATA_DIR and DATABASE_URL as the server reads them (the same validation). */
function readEnv(): Env {
  const parsed = parseEnv();
  if ("problems" in parsed)
    throw new CliError(
      "invalid environment",
      parsed.problems.map((line) => `  ${line}`),
    );
  return parsed.env;
}

/** The service's refusals and failures as CLI errors (message and details, no stack trace). */
async function reported<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof BackupError) throw new CliError(e.message, e.details);
    throw e;
  }
}

const megabytes = (bytes: number) => (bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);

export const backupCommands: CommandGroup = {
  title: "Backups (DATA_DIR's embedded database and local uploads; with DATABASE_URL see docs/backups.md):",
  commands: {
    create: command({
      usage: "<file>",
      summary: "Write a consistent archive of DATA_DIR (the server may be running); .tar.gz/.tgz is gzipped",
      notes: ["    Objects of S3 strategies are not included (back up the bucket with the provider's tools)."],
      args: ["file"],
      async run({ args, out }) {
        const env = readEnv();
        if (env.DATABASE_URL) throw new CliError("DATABASE_URL is set: the database is not the embedded one", [RECIPE]);
        const summary = await reported(() => createBackup({ dataDir: env.DATA_DIR, file: args.file, webhookSecretKey: env.WEBHOOK_SECRET_KEY }));
        out.result(summary, () => {
          const dropped = summary.dropped_images > 0 ? `, ${summary.dropped_images} images deleted during the backup left out` : "";
          const s3 = summary.s3_images > 0 ? ` (${summary.s3_images} images on S3: records only)` : "";
          out.line(
            `Backed up ${summary.records} records in ${summary.tables} tables and ${summary.objects} objects (${megabytes(summary.object_bytes)})${s3}${dropped} ` +
              `to ${summary.file} (${megabytes(summary.archive_bytes)}, ${summary.server_running ? "server running" : "server stopped"}, ${(summary.duration_ms / 1000).toFixed(1)} s).`,
          );
          for (const warning of summary.warnings) out.line(`Warning: ${warning}`);
        });
      },
    }),
    restore: command({
      usage: "<file> [--allow-root <dir>]...",
      summary: "Restore an archive into an empty or new DATA_DIR (server stopped), verifying every checksum",
      notes: [
        "    Writes only under DATA_DIR, and under directories confirmed with --allow-root (repeatable; it or its parent must exist),",
        "    where the archive's local strategies with a root of their own outside DATA_DIR had it; never into DATA_DIR/postgres.",
        "    The whole archive is checked before anything is written.",
      ],
      args: ["file"],
      options: ["allow_root"],
      repeatable: ["allow_root"],
      async run({ args, options, out }) {
        const env = readEnv();
        if (env.DATABASE_URL) throw new CliError("DATABASE_URL is set: restore restores the embedded database only", [RECIPE]);
        const allowRoots = optionList(options.allow_root);
        const summary = await reported(() => restoreBackup({ dataDir: env.DATA_DIR, file: args.file, allowRoots, webhookSecretKey: env.WEBHOOK_SECRET_KEY }));
        out.result(summary, () => {
          const dropped = summary.dropped_images > 0 ? ` (${summary.dropped_images} images deleted during the backup removed)` : "";
          out.line(
            `Restored ${summary.records} records in ${summary.tables} tables and ${summary.objects} objects (${megabytes(summary.object_bytes)})${dropped} ` +
              `from ${summary.file} into ${summary.data_dir} in ${(summary.duration_ms / 1000).toFixed(1)} s: start the server.`,
          );
          for (const warning of summary.warnings) out.line(`Warning: ${warning}`);
        });
      },
    }),
  },
};
