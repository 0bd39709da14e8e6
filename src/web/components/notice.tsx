/** Notices (what happened, what went wrong) and empty states. */
import type { Child, PropsWithChildren } from "hono/jsx";

export function Notice({ kind, children }: PropsWithChildren<{ kind: "error" | "success" | "info" }>) {
  return (
    <p class={`notice ${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </p>
  );
}

/** What a list shows when it has nothing, and the way on (`action`). */
export const EmptyState = ({ children, action }: PropsWithChildren<{ action?: Child }>) => (
  <p class="card empty">
    {children}
    {action && <> {action}</>}
  </p>
);
