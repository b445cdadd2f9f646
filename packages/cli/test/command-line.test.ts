import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE } from "../../server/test/harness.js";
import { run } from "./run-cli.js";

const HAS_ZSH = spawnSync("sh", ["-c", "command -v zsh"]).status === 0;

/** The command line itself: suggestions for typos and shell completion. No server; run once, in the sqlite project. */
describe.skipIf(STORE !== "sqlite")("the command line", () => {
  let dir: string;
  let bash: string;
  let zsh: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "tessera-completion-"));
    writeFileSync(path.join(dir, "cards.jsonl"), "");
    const [forBash, forZsh] = await Promise.all([
      run(["completion", "bash"], {}, dir),
      run(["completion", "zsh"], {}, dir),
    ]);
    expect(forBash.code, forBash.stderr).toBe(0);
    expect(forZsh.code, forZsh.stderr).toBe(0);
    // Sourced from files, as a user's shell does: a script on stdin cannot be sourced where stdin is a socket.
    bash = path.join(dir, "tessera.bash");
    zsh = path.join(dir, "_tessera");
    writeFileSync(bash, forBash.stdout);
    writeFileSync(zsh, forZsh.stdout);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** What bash offers for the line, the last word being completed (empty: after a space). */
  const bashCompletes = (...line: string[]) =>
    execFileSync(
      "bash",
      [
        "-c",
        `source ${bash}; COMP_WORDS=(tessera ${line.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${line.length}; ` +
          '_tessera; printf "%s\\n" "${COMPREPLY[@]}"',
      ],
      { cwd: dir, encoding: "utf8" },
    )
      .split("\n")
      .filter((word) => word !== "");

  it("completes commands, subcommands, flags and a flag's value in bash", () => {
    expect(bashCompletes("to")).toEqual(["tokens"]);
    expect(bashCompletes("")).toEqual(expect.arrayContaining(["serve", "tokens", "reactors", "completion"]));
    expect(bashCompletes("tokens", "s")).toEqual(["search"]);
    expect(bashCompletes("tokens", "search", "--j")).toEqual(["--json"]);
    // After a flag without a value, the next word is another flag.
    expect(bashCompletes("tokens", "search", "--json", "--a")).toEqual(["--all"]);
    // After a flag with a value, the value: a file name.
    expect(bashCompletes("tokens", "import", "--concurrency", "car")).toEqual(["cards.jsonl"]);
    expect(bashCompletes("applications", "create", "--")).toEqual(
      expect.arrayContaining([
        "--name",
        "--type",
        "--permission",
        "--rule",
        "--url",
        "--key",
        "--json",
        "--help",
      ]),
    );
    expect(bashCompletes("tokens", "import", "--")).not.toContain("--name");
  });

  it.skipIf(!HAS_ZSH)("completes the same in zsh", () => {
    /**
     * compadd and _files are zsh's completion builtins: stubs print what they are handed (compadd itself would
     * keep only the words that start with what was typed).
     */
    const zshCompletes = (...line: string[]) =>
      execFileSync(
        "zsh",
        [
          "-c",
          'compdef() { :; }; compadd() { shift; print -l -- "$@"; }; _files() { print -- "(files)"; }; ' +
            `source ${zsh}; words=(tessera ${line.map((w) => `'${w}'`).join(" ")}); CURRENT=${line.length + 1}; _tessera`,
        ],
        { cwd: dir, encoding: "utf8" },
      )
        .split("\n")
        .filter((word) => word !== "");
    expect(zshCompletes("to")).toContain("tokens");
    expect(zshCompletes("tokens", "s")).toEqual(["create", "get", "search", "delete", "import", "--help"]);
    expect(zshCompletes("tokens", "search", "--j")).toContain("--json");
    expect(zshCompletes("tokens", "search", "--json", "")).toContain("--all");
    expect(zshCompletes("tokens", "import", "--concurrency", "")).toEqual(["(files)"]);
  });

  it("suggests the command or flag meant, keeping exit 2 and one line", async () => {
    const [command, subcommand, flag, fine] = await Promise.all([
      run(["tokns"], {}, dir),
      run(["tokens", "serch"], {}, dir),
      run(["tokens", "search", "--jsn"], {}, dir),
      run(["completion", "fish"], {}, dir),
    ]);
    expect(command.stderr).toBe(
      "tessera: unknown command 'tokns'; did you mean tokens? (run 'tessera --help' for usage)\n",
    );
    expect(subcommand.stderr).toBe(
      "tessera: unknown command 'tokens serch' (did you mean search?): use one of create, get, search, delete, import " +
        "(run 'tessera tokens --help' for usage)\n",
    );
    expect(flag.stderr).toBe(
      "tessera: unknown option '--jsn'; did you mean --json? (run 'tessera tokens search --help' for usage)\n",
    );
    expect(fine.stderr).toBe(
      "tessera: unknown shell 'fish': use bash or zsh (run 'tessera completion --help' for usage)\n",
    );
    for (const result of [command, subcommand, flag, fine]) expect(result.code).toBe(2);
  });
});
