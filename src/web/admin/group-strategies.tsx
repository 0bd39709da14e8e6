/** The group form's ordered strategies: a position per strategy (1 first), empty for the ones the group does not use. */
import { GROUP_STRATEGIES_MAX, type Strategy } from "../../db/repositories/strategies.ts";
import { Cell, FieldError, Hint, Table } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { type GroupValues, POSITION } from "./group-values.ts";
import { ADMIN } from "./layout.tsx";

const text = (v: GroupValues[string]) => (v === null || v === undefined ? "" : String(v));

export function Strategies({ strategies, v }: { strategies: Strategy[]; v: { values: GroupValues; errors: Record<string, string> } }) {
  const error = v.errors.strategy_ids;
  const ordered = [...strategies].sort((a, b) => {
    const pa = Number(v.values[`${POSITION}${a.id}`]) || Infinity;
    const pb = Number(v.values[`${POSITION}${b.id}`]) || Infinity;
    return pa - pb || a.id - b.id;
  });
  const col = {
    position: t("admin.groups.col.position"),
    strategy: t("admin.groups.col.strategy"),
    driver: t("admin.groups.col.driver"),
    state: t("admin.groups.col.state"),
  };
  return (
    <fieldset class="admin-fieldset" aria-describedby={`group-strategies-hint${error ? " group-strategies-error" : ""}`}>
      <legend>{t("admin.groups.strategies")}</legend>
      <Hint id="group-strategies" hint={t("admin.groups.strategies.hint", { max: GROUP_STRATEGIES_MAX })} />
      <FieldError id="group-strategies" error={error} />
      {strategies.length === 0 ? (
        <p>{rich("admin.groups.strategies.none", { a: (chunks) => <a href={`${ADMIN}/strategies`}>{chunks}</a> })}</p>
      ) : (
        <Table class="list admin-positions" columns={[col.position, col.strategy, col.driver, col.state]}>
          {ordered.map((s) => (
            <tr>
              <Cell label={col.position}>
                <label for={`group-position-${s.id}`} class="visually-hidden">
                  {t("admin.groups.positionOf", { name: s.name, id: s.id })}
                </label>
                <input
                  type="number"
                  id={`group-position-${s.id}`}
                  name={`${POSITION}${s.id}`}
                  min={1}
                  max={GROUP_STRATEGIES_MAX}
                  step={1}
                  inputmode="numeric"
                  class="position"
                  value={text(v.values[`${POSITION}${s.id}`])}
                  aria-invalid={error ? "true" : undefined}
                  aria-describedby={error ? "group-strategies-error" : undefined}
                />
              </Cell>
              <Cell label={col.strategy}>
                {s.name} <span class="hint">#{s.id}</span>
              </Cell>
              <Cell label={col.driver}>{s.driver}</Cell>
              <Cell label={col.state}>{s.enabled ? t("admin.enabled") : t("admin.disabled")}</Cell>
            </tr>
          ))}
        </Table>
      )}
    </fieldset>
  );
}
