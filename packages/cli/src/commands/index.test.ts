import { describe, expect, it } from "vitest";
import { ADMIN_COMMANDS, VAULT_COMMANDS } from "./index.js";

const commands = [...VAULT_COMMANDS, ...ADMIN_COMMANDS].flatMap((entry) =>
  "commands" in entry ? entry.commands : [entry],
);

describe("every command's help", () => {
  it.each(commands.map((command) => [command.name, command] as const))("%s", (name, command) => {
    const help = command.help();
    expect(help.startsWith(`Usage: tessera ${name}`)).toBe(true);
    expect(help).toContain(command.summary);
    expect(help).toMatch(/^ {2}-h, --help +Show this help$/m);
    if (ADMIN_COMMANDS.some((group) => name.startsWith(`${group.name} `))) {
      for (const flag of ["--url <url>", "--key <key>", "--json"]) expect(help).toContain(flag);
    }
  });
});
