/** Cards: a titled section of a page, and tables that become one block per row on a phone. */
import type { Child, PropsWithChildren } from "hono/jsx";

/** A section with its heading (`id` names it for screen readers). */
export function Card({ id, title, narrow, class: extra, children }: PropsWithChildren<{ id?: string; title?: Child; narrow?: boolean; class?: string }>) {
  const cls = ["card", narrow && "narrow", extra].filter(Boolean).join(" ");
  if (!title) return <section class={cls}>{children}</section>;
  return (
    <section class={cls} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A table whose rows stack on a phone: each cell shows its column's name (`Cell`'s label) before its value. A table
 * narrow enough for a phone as it is says `stack={false}` (and its cells need no labels).
 */
export function Table({
  columns,
  label,
  class: extra,
  stack = true,
  children,
}: PropsWithChildren<{ columns: (string | { hidden: string })[]; label?: string; class?: string; stack?: boolean }>) {
  const cls = [stack && "stack", extra].filter(Boolean).join(" ");
  return (
    <div class="table-wrap">
      <table class={cls || undefined} aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col">{typeof c === "string" ? c : <span class="visually-hidden">{c.hidden}</span>}</th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export const Cell = ({ label, class: cls, children }: PropsWithChildren<{ label?: string; class?: string }>) => (
  <td data-label={label} class={cls}>
    {children}
  </td>
);
