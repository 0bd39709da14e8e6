import type { Deps } from "../deps.ts";
import type { Actor } from "../services/audit.ts";
import type { Caller, UserCaller } from "../services/caller.ts";
import type { Services } from "../services/index.ts";
import type { UploadBodyGate } from "./body-gate.ts";
import type { FailedAuthThrottle } from "./throttle.ts";

/** What every request has before authentication. */
export type RequestEnv = {
  Variables: {
    deps: Deps;
    /** The app's services (services/index.ts buildServices). */
    services: Services;
    /** Calls this same app in-process (an admin page's call of the admin API: web/admin/api.ts). */
    callApp: (path: string, init: RequestInit, env: unknown) => Response | Promise<Response>;
    requestId: string;
    authThrottle: FailedAuthThrottle;
    uploadBodies: UploadBodyGate;
    /**
     * The client's address, resolved once from the socket (or the trusted proxy header) before anything reads or
     * replaces the body: every throttle, gate, audit row and access-log line reads it from here.
     */
    clientAddress: string;
    /** An administrator's own in-process call of the admin API from an admin page (http/internal-call.ts). */
    internalActor?: Actor;
    /** Bytes of a body the handler read itself, for the access log when the request had no Content-Length. */
    bytesIn?: number;
    /** What an admin operation adds to its audit entry beside the fields sent (routes/admin/common.ts): names of what it removed. */
    auditNote?: Record<string, string | null>;
  };
};

export type AppEnv = { Variables: RequestEnv["Variables"] & { caller: Caller } };

/** The environment of a handler behind `requireUser`. */
export type UserEnv = { Variables: RequestEnv["Variables"] & { caller: UserCaller } };
