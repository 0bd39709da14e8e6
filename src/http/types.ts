import type { Deps } from "../deps.ts";
import type { Caller, UserCaller } from "../services/caller.ts";
import type { UploadBodyGate } from "./body-gate.ts";
import type { FailedAuthThrottle } from "./throttle.ts";

/** What every request has before authentication. */
export type RequestEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    authThrottle: FailedAuthThrottle;
    uploadBodies: UploadBodyGate;
    /** Bytes of a body the handler read itself, for the access log when the request had no Content-Length. */
    bytesIn?: number;
  };
};

export type AppEnv = { Variables: RequestEnv["Variables"] & { caller: Caller } };

/** The environment of a handler behind `requireUser`. */
export type UserEnv = { Variables: RequestEnv["Variables"] & { caller: UserCaller } };
