import type { CommanderError } from "commander";
import { Command as Parser, Option } from "commander";
import { groupHelp, type Command, type Flag, type Group } from "./args.js";
import { EXIT, UsageError } from "./failure.js";

/**
 * The command line is parsed by commander: subcommands, `--help` at every level (and winning over anything else
 * on the line), "did you mean" for a mistyped command or flag. Our own specs (args.ts) stay the one description
 * of each command: the parser, the help and the shell completion are all built from them. Commander's own output
 * is silenced and its errors rewritten, so that messages and exit codes stay the CLI's (docs/cli.md).
 */
export function buildProgram(
  entries: readonly (Command | Group)[],
  options: { readonly version: string; readonly help: () => string },
): { run(argv: readonly string[]): Promise<number> } {
  let exitCode: number = EXIT.ok;
  const program = configure(new Parser("tessera"), "tessera", options.help).version(
    options.version,
    "--version",
    "Print the version",
  );
  for (const entry of entries) {
    if ("commands" in entry) {
      const group = configure(new Parser(entry.name), `tessera ${entry.name}`, () => groupHelp(entry));
      for (const command of entry.commands) {
        group.addCommand(leaf(command, entry, (code) => (exitCode = code)));
      }
      program.addCommand(group);
    } else {
      program.addCommand(leaf(entry, undefined, (code) => (exitCode = code)));
    }
  }
  return {
    async run(argv) {
      try {
        await program.parseAsync([...argv], { from: "user" });
      } catch (error) {
        if (error instanceof Finished) return error.code;
        throw error;
      }
      return exitCode;
    },
  };
}

/** Help or the version was printed: nothing else to do. */
class Finished extends Error {
  constructor(readonly code: number) {
    super("finished");
  }
}

function leaf(command: Command, group: Group | undefined, done: (code: number) => void): Parser {
  const name = group === undefined ? command.name : command.name.slice(group.name.length + 1);
  const parser = configure(new Parser(name), `tessera ${command.name}`, () => command.help());
  const attributes = new Map<string, string>();
  for (const [flag, spec] of Object.entries(command.flags)) {
    const option = optionOf(flag, spec);
    attributes.set(flag, option.attributeName());
    parser.addOption(option);
  }
  if (command.takesOperands) parser.argument("[operands...]");
  return parser.action(async (...args: unknown[]) => {
    const self = args.at(-1) as Parser;
    const parsed = self.opts();
    // Commander names values in camelCase (--data-json → dataJson); the specs use the flags' own names.
    const values = Object.fromEntries([...attributes].map(([flag, attribute]) => [flag, parsed[attribute]]));
    done(await command.execute(values, self.args));
  });
}

function optionOf(name: string, flag: Flag): Option {
  const option = new Option(
    `${flag.short === undefined ? "" : `-${flag.short}, `}--${name}${flag.type === "string" ? ` ${flag.value ?? "<value>"}` : ""}`,
    flag.help,
  );
  if (flag.multiple === true) {
    option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  }
  return option;
}

function configure(parser: Parser, path: string, help: () => string): Parser {
  return (
    parser
      .helpOption("-h, --help", "Show this help")
      // No implicit `help <command>`: `--help` is the one documented way, and completion offers it.
      .helpCommand(false)
      .configureHelp({ formatHelp: () => help() })
      .showSuggestionAfterError(true)
      // The specs check their operands themselves (args.ts), with messages of their own.
      .allowExcessArguments(true)
      .configureOutput({ writeErr: () => undefined, outputError: () => undefined })
      .exitOverride((error) => {
        throw translate(error, parser, path, help);
      })
  );
}

/**
 * Commander's errors in the CLI's words: one line, the command whose help explains it, and commander's own
 * suggestion for a typo ("did you mean ...").
 */
function translate(error: CommanderError, parser: Parser, path: string, help: () => string): Error {
  const suggestion = /\(Did you mean (?:one of )?(.+)\?\)/.exec(error.message)?.[1];
  const didYouMean = suggestion === undefined ? "" : `; did you mean ${suggestion}?`;
  const quoted = /'([^']+)'/.exec(error.message)?.[1] ?? "";
  switch (error.code) {
    case "commander.helpDisplayed":
    case "commander.version":
      return new Finished(EXIT.ok);
    case "commander.help": {
      // A command that needs a subcommand was given none.
      if (parser.parent === null) {
        process.stderr.write(help());
        return new Finished(EXIT.usage);
      }
      const names = parser.commands.map((command) => command.name()).join(", ");
      return new UsageError(`'${path}' needs a command: ${names}`, path);
    }
    case "commander.unknownCommand": {
      if (parser.parent === null) return new UsageError(`unknown command '${quoted}'${didYouMean}`, path);
      const names = parser.commands.map((command) => command.name()).join(", ");
      const also = suggestion === undefined ? "" : ` (did you mean ${suggestion}?)`;
      return new UsageError(`unknown command '${parser.name()} ${quoted}'${also}: use one of ${names}`, path);
    }
    case "commander.unknownOption":
      return new UsageError(`unknown option '${quoted}'${didYouMean}`, path);
    case "commander.optionMissingArgument":
      return new UsageError(`${quoted.split(" ", 1)[0]} needs a value`, path);
    default:
      return new UsageError(error.message.replace(/^error: /, ""), path);
  }
}
