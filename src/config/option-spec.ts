/**
 * One table per command declares every option once: its argv shape, default, help
 * text and value schema. The CLI derives citty's help from it and config/argv.ts
 * parses argv strictly against it, so help and behaviour cannot drift apart.
 */
import type { ValueSchema } from "./values.ts";

interface BaseOption {
  readonly short?: string;
  readonly description: string;
  /** Shown as =<hint> in help. */
  readonly valueHint?: string;
  /** A default that is described rather than applied ("auto-generated from the image"). */
  readonly defaultText?: string;
  /** What to do about a bad value; printed after the error. */
  readonly hint?: string;
  readonly hidden?: boolean;
}

export interface StringOption<T> extends BaseOption {
  readonly kind: "string";
  readonly repeatable: boolean;
  readonly schema: ValueSchema<T>;
  readonly default?: string;
}

export interface BooleanOption extends BaseOption {
  readonly kind: "boolean";
  readonly default: boolean;
}

export type OptionSpec = StringOption<unknown> | BooleanOption;
export type OptionTable = Readonly<Record<string, OptionSpec>>;

type ValueOf<O> = O extends BooleanOption
  ? boolean
  : O extends { readonly schema: ValueSchema<infer T> }
    ? O extends { readonly repeatable: true }
      ? readonly T[]
      : O extends { readonly default: string }
        ? T
        : T | undefined
    : never;

export type OptionValues<Table extends OptionTable> = { readonly [K in keyof Table]: ValueOf<Table[K]> };

// `const S` keeps whether a default was given, so the parsed type can drop `undefined`.
export function stringOption<const S extends Omit<StringOption<unknown>, "kind" | "repeatable">>(
  spec: S,
): S & { readonly kind: "string"; readonly repeatable: false } {
  return { ...spec, kind: "string", repeatable: false };
}

export function repeatableOption<const S extends Omit<StringOption<unknown>, "kind" | "repeatable" | "default">>(
  spec: S,
): S & { readonly kind: "string"; readonly repeatable: true } {
  return { ...spec, kind: "string", repeatable: true };
}

export function booleanOption(spec: Omit<BooleanOption, "kind">): BooleanOption {
  return { ...spec, kind: "boolean" };
}

/**
 * How the help of an option that takes a secret's value on the command line ends, the same on every
 * such option: any local user reads it in the process list for the whole run; its -file form does not.
 */
export function inProcessList(option: string): string {
  return `(not recommended: visible in the process list; prefer --${option}-file)`;
}
