import type { Deps } from "../deps.ts";
import type { Caller, UserCaller } from "../services/caller.ts";

export type AppEnv = {
  Variables: {
    deps: Deps;
    requestId: string;
    caller: Caller;
  };
};

/** The environment of a handler behind `requireUser`. */
export type UserEnv = { Variables: Omit<AppEnv["Variables"], "caller"> & { caller: UserCaller } };
