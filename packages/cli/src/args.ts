import { parseArgs } from "node:util";
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

/** A command as the dispatcher sees it: typed flags stay inside. */
export interface Command {
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  help(): string;
  run(argv: readonly string[]): Promise<number>;
}

export interface Group {
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly Command[];
}

const HELP_FLAG: Flag = { type: "boolean", short: "h", help: "Show this help" };

/** `--help` wins over everything else on the line, so that it works on a line that would not parse. */
export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

export function defineCommand<const F extends Flags>(spec: CommandSpec<F>): Command {
  const command = `tessera ${spec.name}`;
  return {
    name: spec.name,
    usage: spec.usage,
    summary: spec.summary,
    help: () => commandHelp(spec),
    run: async (argv) => {
      if (wantsHelp(argv)) {
        process.stdout.write(commandHelp(spec));
        return 0;
      }
      return spec.run(parse(spec, argv, command));
    },
  };
}

function parse<F extends Flags>(spec: CommandSpec<F>, argv: readonly string[], command: string): Parsed<F> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: spec.flags, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(parseProblem(error), command);
  }
  const { min, max, name } = spec.operands ?? { min: 0, max: 0, name: "" };
  if (parsed.positionals.length < min) throw new UsageError(`missing ${name}`, command);
  if (parsed.positionals.length > max) {
    throw new UsageError(`unexpected argument '${parsed.positionals[max]}'`, command);
  }
  return { values: parsed.values, operands: parsed.positionals, command };
}

/** parseArgs' messages run over several sentences and lines; one short line is kept. */
function parseProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const option = /'(-[^' ]+)/.exec(message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && option !== undefined) return `unknown option '${option}'`;
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && option !== undefined) {
    return message.includes("ambiguous")
      ? `${option} needs a value; write ${option}=<value> for one that starts with '-'`
      : `${option} needs a value`;
  }
  return message.split(/\.\s|\n/, 1)[0] ?? message;
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
