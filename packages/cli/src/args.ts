import { UsageError } from "./failure.js";

export interface Flag {
  readonly type: "string" | "boolean";
  readonly multiple?: true;
  readonly short?: string;
  /** The value's placeholder in help, e.g. `<id>`. */
  readonly value?: string;
  readonly help: string;
}

export type Flags = Readonly<Record<string, Flag>>;

export type Values<F extends Flags> = {
  readonly [K in keyof F]?: F[K]["type"] extends "boolean"
    ? boolean
    : F[K]["multiple"] extends true
      ? string[]
      : string;
};

export interface Parsed<F extends Flags> {
  readonly values: Values<F>;
  readonly operands: readonly string[];
  /** As typed, e.g. `tessera tokens search`: a usage error names it, to point at its `--help`. */
  readonly command: string;
}

export interface CommandSpec<F extends Flags> {
  /** As typed after `tessera`, e.g. `tokens search`. */
  readonly name: string;
  /** What follows the name in the usage line, e.g. `<id> [options]`. */
  readonly usage: string;
  readonly summary: string;
  /** Shown by `--help` between the usage line and the options. */
  readonly description?: string;
  /** How many operands (positional arguments) the command takes; none by default. */
  readonly operands?: { readonly min: number; readonly max: number; readonly name: string };
  readonly flags: F;
  readonly examples?: readonly string[];
  run(parsed: Parsed<F>): Promise<number>;
}

/** A command as the parser (program.ts) sees it: typed flags stay inside. */
export interface Command {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  readonly flags: Flags;
  /** How many operands it takes, for the parser to accept them; it checks the count itself. */
  readonly takesOperands: boolean;
  help(): string;
  /** Runs the command on what the parser read; answers the exit code. */
  execute(values: Readonly<Record<string, unknown>>, operands: readonly string[]): Promise<number>;
}

export interface Group {
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly Command[];
}

export const HELP_FLAG: Flag = { type: "boolean", short: "h", help: "Show this help" };

export function defineCommand<const F extends Flags>(spec: CommandSpec<F>): Command {
  const command = `tessera ${spec.name}`;
  return {
    name: spec.name,
    usage: spec.usage,
    summary: spec.summary,
    flags: spec.flags,
    takesOperands: (spec.operands?.max ?? 0) > 0,
    help: () => commandHelp(spec),
    execute: (values, operands) => {
      const { min, max, name } = spec.operands ?? { min: 0, max: 0, name: "" };
      if (operands.length < min) throw new UsageError(`missing ${name}`, command);
      if (operands.length > max) throw new UsageError(`unexpected argument '${operands[max]}'`, command);
      // The parser was built from these flags (program.ts), so the values have their types.
      return spec.run({ values: values as Values<F>, operands, command });
    },
  };
}

/** A `string` flag read as an integer in [min, max]; a usage error otherwise. */
export function integerFlag(
  value: string | undefined,
  flag: string,
  range: { min: number; max: number },
  command: string,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < range.min || number > range.max) {
    const allowed =
      range.max === Number.MAX_SAFE_INTEGER ? `at least ${range.min}` : `from ${range.min} to ${range.max}`;
    throw new UsageError(`${flag} must be an integer ${allowed}`, command);
  }
  return number;
}

/** `--page`, `--size` and `--all` of a list or search, checked; `--all` reads every page, so no `--page`. */
export function paging(
  values: { readonly page?: string; readonly size?: string; readonly all?: boolean },
  command: string,
): { page?: number; size?: number } {
  const page = integerFlag(values.page, "--page", { min: 1, max: Number.MAX_SAFE_INTEGER }, command);
  const size = integerFlag(values.size, "--size", { min: 1, max: 100 }, command);
  if (values.all === true && page !== undefined) {
    throw new UsageError("--all reads every page: leave out --page", command);
  }
  return { ...(page !== undefined && { page }), ...(size !== undefined && { size }) };
}

function commandHelp<F extends Flags>(spec: CommandSpec<F>): string {
  const flags = Object.entries({ ...spec.flags, help: HELP_FLAG }).map(([name, flag]) => {
    const short = flag.short === undefined ? "    " : `-${flag.short}, `;
    const value = flag.type === "string" ? ` ${flag.value ?? "<value>"}` : "";
    return [
      `${short}--${name}${value}`,
      flag.help + (flag.multiple === true ? " (repeatable)" : ""),
    ] as const;
  });
  const sections = [`Usage: tessera ${spec.name} ${spec.usage}`.trimEnd(), spec.summary];
  if (spec.description !== undefined) sections.push(spec.description);
  sections.push(`Options:\n${columns(flags)}`);
  if (spec.examples !== undefined)
    sections.push(`Examples:\n${spec.examples.map((e) => `  ${e}`).join("\n")}`);
  return `${sections.join("\n\n")}\n`;
}

export function groupHelp(group: Group): string {
  const commands = group.commands.map((c) => [c.name.slice(group.name.length + 1), c.summary] as const);
  return (
    `Usage: tessera ${group.name} <command> [options]\n\n${group.summary}\n\nCommands:\n${columns(commands)}\n\n` +
    `Run 'tessera ${group.name} <command> --help' for a command's options.\n`
  );
}

/** Two aligned columns; a first column wider than `width` pushes its text to the next line. */
export function columns(
  rows: readonly (readonly [string, string])[],
  width = Math.min(34, Math.max(...rows.map(([left]) => left.length))),
): string {
  return rows
    .map(([left, right]) =>
      left.length > width
        ? `  ${left}\n  ${" ".repeat(width + 2)}${right}`
        : `  ${left.padEnd(width)}  ${right}`,
    )
    .join("\n");
}
