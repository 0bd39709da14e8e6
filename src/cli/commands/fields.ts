/**
 * Resources edited field by field from the command line (user groups, storage strategies): each
 * has a table of its input schema's fields, and the same `create <name>` and `set <id>` commands.
 */
import type { AdminApi } from "../client.ts";
import { command, flag, requireOption, type Command } from "../command.ts";
import { usageError } from "../errors.ts";
import type { Output } from "../output.ts";
import { parseBool, parseId, parseInteger, parseJsonObject, parseNullableInteger, splitList } from "../values.ts";

export type FieldType = "string" | "nullable_string" | "bool" | "int" | "nullable_int" | "string_list" | "int_list" | "json";

function parseField(type: FieldType, value: string, label: string): unknown {
  switch (type) {
    case "string":
      return value;
    case "nullable_string":
      return value === "null" ? null : value;
    case "bool":
      return parseBool(value, label);
    case "int":
      return parseInteger(value, label);
    case "nullable_int":
      return parseNullableInteger(value, label);
    case "string_list":
      return splitList(value).map((s) => s.toLowerCase());
    case "int_list":
      return splitList(value).map((s) => parseInteger(s, `${label} item`));
    case "json":
      return parseJsonObject(value, label);
  }
}

interface FieldResource<Input, CreateInput, Saved> {
  /** `group`, `strategy`: the first command word, and how messages name one */
  noun: string;
  /** How each field of `Input` is typed on the command line (`--max-pixels 5` → `max_pixels: 5`) */
  fields: Record<keyof Input & string, FieldType>;
  create: { usage: string; summary: string; requires?: { field: keyof Input & string; placeholder: string } };
  set: { usage: string; summary: string; notes?: readonly string[] };
  post(api: AdminApi, body: CreateInput): Promise<Saved>;
  patch(api: AdminApi, id: number, body: Input): Promise<Saved>;
}

/** Fails the type check (naming the odd fields) unless create's and set's input schemas have the same fields: one table serves both. */
type SameFields<A, B> = [Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A>] extends [never]
  ? unknown
  : { fieldsOnlyInCreateOrSet: Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A> };

/** `<noun> create <name> [--field value ...]` and `<noun> set <id> --field value ...` */
export function fieldCommands<Input, CreateInput, Saved extends { id: number; name: string }>(
  resource: FieldResource<Input, CreateInput, Saved> & SameFields<Input, CreateInput>,
): { create: Command; set: Command } {
  const { noun } = resource;
  const fields: Record<string, FieldType> = resource.fields;
  const names = Object.keys(fields) as (keyof Input & string)[];

  // The field table types values only loosely (an enum is a string here): the server checks them, and its field errors are printed.
  const body = <Body>(values: Partial<Record<string, string>>) =>
    Object.fromEntries(Object.entries(values).map(([name, value]) => [name, parseField(fields[name], value!, flag(name))])) as Body;

  const show = (out: Output, verb: string, saved: Saved) =>
    out.result(saved, () => {
      out.line(`${verb} ${noun} ${saved.name} (id ${saved.id}).`);
      out.keyValues(saved);
    });

  return {
    create: command({
      ...resource.create,
      args: ["name"],
      // The name is create's argument.
      options: names.filter((name) => name !== "name"),
      async run(inv) {
        const created = body<CreateInput>({ ...inv.options, name: inv.args.name });
        const { requires } = resource.create;
        if (requires) requireOption(inv, requires.field, requires.placeholder);
        show(inv.out, "Created", await resource.post(inv.api(), created));
      },
    }),
    set: command({
      ...resource.set,
      args: ["id"],
      options: names,
      async run({ name, args, options, api, out }) {
        const id = parseId(args.id, `${noun} id`);
        const changes = body<Input>(options);
        if (Object.keys(options).length === 0) throw usageError(`${name} needs at least one --field value`);
        show(out, "Updated", await resource.patch(api(), id, changes));
      },
    }),
  };
}
