import packageJson from "../package.json" with { type: "json" };
import { columns, groupHelp, wantsHelp, type Command, type Group } from "./args.js";
import { ADMIN_COMMANDS, VAULT_COMMANDS } from "./commands/index.js";
import { DEFAULT_URL } from "./connection.js";
import { EXIT, UsageError, explain } from "./failure.js";

/** Wide enough for `applications regenerate`, so both lists of commands line up. */
const COMMAND_WIDTH = 23;

function topHelp(): string {
  const list = (entries: readonly (Command | Group)[]) =>
    columns(
      entries.flatMap((entry) =>
        "commands" in entry
          ? entry.commands.map((command) => [command.name, command.summary] as const)
          : [[entry.name, entry.summary] as const],
      ),
      COMMAND_WIDTH,
    );
  return `Usage: tessera <command> [options]

Run the vault, with the server's environment (see .env.example):
${list(VAULT_COMMANDS)}

Administer a running vault over its API, with an API key:
${list(ADMIN_COMMANDS)}

Options:
  -h, --help               Show help; after a command, that command's (tessera tokens search --help)
  --version                Print the version

Environment of the admin commands:
  TESSERA_URL              The server's URL (or --url); default ${DEFAULT_URL}
  SVC_API_KEY              The API key (or --key)

Exit codes: 0 success, 1 failure or server error (5xx), 2 usage error, 3 server unreachable or timed out,
4 request refused (4xx), 69 the server's database unavailable at start, 78 configuration error.
Full reference: docs/cli.md.
`;
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(topHelp());
    return EXIT.usage;
  }
  if (name === "--help" || name === "-h") {
    process.stdout.write(topHelp());
    return EXIT.ok;
  }
  if (name === "--version") {
    process.stdout.write(`${packageJson.version}\n`);
    return EXIT.ok;
  }
  const entry = [...VAULT_COMMANDS, ...ADMIN_COMMANDS].find((candidate) => candidate.name === name);
  if (entry === undefined) {
    throw new UsageError(name.startsWith("-") ? `unknown option '${name}'` : `unknown command '${name}'`);
  }
  return "commands" in entry ? runGroup(entry, rest) : entry.run(rest);
}

async function runGroup(group: Group, argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  const command = group.commands.find((candidate) => candidate.name === `${group.name} ${name}`);
  if (command !== undefined) return command.run(rest);
  if (wantsHelp(argv)) {
    process.stdout.write(groupHelp(group));
    return EXIT.ok;
  }
  const names = group.commands.map((candidate) => candidate.name.slice(group.name.length + 1)).join(", ");
  throw new UsageError(
    name === undefined
      ? `'tessera ${group.name}' needs a command: ${names}`
      : `unknown command '${group.name} ${name}': use one of ${names}`,
    `tessera ${group.name}`,
  );
}

/** Exits once stdout has drained, so that a pipe gets the whole output. */
function exit(code: number): void {
  process.stdout.write("", () => process.exit(code));
}

// A reader that stops early (`| head`) closes the pipe; that is not an error of ours.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(EXIT.ok);
  process.stderr.write(`tessera: cannot write the output (${error.code ?? error.message})\n`);
  process.exit(EXIT.failure);
});

main(process.argv.slice(2)).then(exit, (error: unknown) => {
  const { code, message } = explain(error);
  process.stderr.write(`tessera: ${message}\n`);
  const debug = (process.env.TESSERA_DEBUG ?? "") !== "";
  if (debug && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  exit(code);
});
