import packageJson from "../package.json" with { type: "json" };
import { columns, type Command, type Group } from "./args.js";
import { ADMIN_COMMANDS, SHELL_COMMANDS, VAULT_COMMANDS } from "./commands/index.js";
import { DEFAULT_URL } from "./connection.js";
import { EXIT, explain } from "./failure.js";
import { buildProgram } from "./program.js";

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

Shell:
${list(SHELL_COMMANDS)}

Options:
  -h, --help               Show help; after a command, that command's (tessera tokens search --help)
  --version                Print the version

Environment of the admin commands:
  TESSERA_URL              The server's URL (or --url); default ${DEFAULT_URL}
  SVC_API_KEY              The API key (or --key)

Exit codes: 0 success, 1 failure or server error (5xx), 2 usage error, 3 server unreachable or timed out,
4 request refused (4xx), 69 the server's database or master key unavailable at start, 78 configuration error,
80-84 the master key cannot be used (module, token, PIN, key label, not this store's key).
Full reference: docs/cli.md.
`;
}

function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram([...VAULT_COMMANDS, ...ADMIN_COMMANDS, ...SHELL_COMMANDS], {
    version: packageJson.version,
    help: topHelp,
  });
  return program.run(argv);
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
