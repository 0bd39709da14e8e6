/**
 * Confirmations of what cannot be undone: a button whose form asks first (app.js, `data-confirm`), and the page
 * that asks instead when there is no script (the form arrives with `confirmed=0`).
 */
import type { Child, PropsWithChildren } from "hono/jsx";
import { t } from "../i18n/index.ts";
import type { SignedIn } from "../session.ts";
import { FormToken } from "./form.tsx";
import { type Section, Layout } from "./layout.tsx";

const Hidden = ({ fields }: { fields?: Record<string, string> }) => (
  <>
    {Object.entries(fields ?? {}).map(([name, value]) => (
      <input type="hidden" name={name} value={value} />
    ))}
  </>
);

/** A one-button form that asks `question` before it is sent. */
export function ConfirmButton({
  action,
  question,
  signedIn,
  label,
  ariaLabel,
  danger = true,
  small,
  hidden,
  class: cls,
}: {
  action: string;
  question: string;
  signedIn: SignedIn;
  label: Child;
  ariaLabel?: string;
  danger?: boolean;
  small?: boolean;
  hidden?: Record<string, string>;
  class?: string;
}) {
  return (
    <form method="post" action={action} class={cls} data-confirm={question}>
      <FormToken signedIn={signedIn} />
      <input type="hidden" name="confirmed" value="0" />
      <Hidden fields={hidden} />
      <button type="submit" class={[danger && "danger", small && "small"].filter(Boolean).join(" ") || undefined} aria-label={ariaLabel}>
        {label}
      </button>
    </form>
  );
}

/** The end of a no-script confirmation: the form token, the confirmation, where to go back, the button and Cancel. */
export const ConfirmFooter = ({ signedIn, label, back, hidden }: { signedIn: SignedIn; label: string; back: string; hidden?: Record<string, string> }) => (
  <>
    <FormToken signedIn={signedIn} />
    <input type="hidden" name="confirmed" value="1" />
    <Hidden fields={hidden} />
    <div class="buttons">
      <button type="submit" class="danger">
        {label}
      </button>
      <a class="button" href={back}>
        {t("common.cancel")}
      </a>
    </div>
  </>
);

/** The page that asks when there is no script: the question (children), then the confirming button and Cancel. */
export function ConfirmPage({
  title,
  signedIn,
  active,
  action,
  confirmLabel,
  cancel,
  hidden,
  wide,
  children,
  frame,
}: PropsWithChildren<{
  title: string;
  signedIn: SignedIn;
  active?: Section;
  action: string;
  confirmLabel: string;
  cancel: string;
  hidden?: Record<string, string>;
  wide?: boolean;
  /** Another frame than the user center's (the admin pages'). */
  frame?: (props: PropsWithChildren<{ title: string }>) => Child;
}>) {
  const form = (
    <form class={wide ? "card" : "card narrow"} method="post" action={action}>
      {children}
      <ConfirmFooter signedIn={signedIn} label={confirmLabel} back={cancel} hidden={hidden} />
    </form>
  );
  if (frame) return frame({ title, children: form });
  return (
    <Layout title={title} signedIn={signedIn} active={active}>
      {form}
    </Layout>
  );
}
