import { HELP_FLAG, defineCommand, type Command, type Group } from "../args.js";
import { UsageError } from "../failure.js";

/** What a shell completes, word by word: the commands at each level, and each command's flags. */
interface Tree {
  /** `""` for `tessera` itself, else the command as typed after it ("tokens", "tokens search"). */
  readonly path: string;
  readonly words: readonly string[];
}

/** Every level of the command line with what may follow there, from the same specs the parser is built from. */
function treeOf(entries: readonly (Command | Group)[]): Tree[] {
  const flagsOf = (command: Command) =>
    Object.keys({ ...command.flags, help: HELP_FLAG }).map((flag) => `--${flag}`);
  const top: Tree = { path: "", words: [...entries.map((entry) => entry.name), "--help", "--version"] };
  return [
    top,
    ...entries.flatMap((entry): Tree[] =>
      "commands" in entry
        ? [
            {
              path: entry.name,
              words: [
                ...entry.commands.map((command) => command.name.slice(entry.name.length + 1)),
                "--help",
              ],
            },
            ...entry.commands.map((command) => ({ path: command.name, words: flagsOf(command) })),
          ]
        : [{ path: entry.name, words: flagsOf(entry) }],
    ),
  ];
}

/**
 * The script is static: the shell completes from tables written into it, without starting node (which takes
 * a second) at every tab. After an upgrade that adds commands, the script is generated again. Both shells run
 * the same lookup, over `line` (the words, 0-based) and `cword` (the index of the word being completed).
 */
export function completionScript(shell: "bash" | "zsh", entries: readonly (Command | Group)[]): string {
  const cases = treeOf(entries)
    .map(({ path, words }) => `    "${path}") choices="${words.join(" ")}" ;;`)
    .join("\n");
  // The command typed so far is the words that are not flags, up to two ("tokens search --size 5" → "tokens
  // search"). After a flag that takes a value, the value is completed as a file name: the one thing that helps
  // for <file>, <id> or <n> alike. (No variable is called path or words: zsh ties those to $PATH and the line.)
  const lookup = `  local cmdpath="" word i
  for ((i = 1; i < cword; i++)); do
    word="\${line[i]}"
    case "$word" in
      -*) ;;
      *) if [[ -z "$cmdpath" ]]; then cmdpath="$word"; elif [[ "$cmdpath" != *" "* ]]; then cmdpath="$cmdpath $word"; fi ;;
    esac
  done
  local choices=""
  case "$cmdpath" in
${cases}
  esac
  local previous="\${line[cword-1]}" takes_value=""
  if [[ "$previous" == --* && "$cmdpath" != "" && " \${TESSERA_BOOLEAN_FLAGS} " != *" $previous "* ]]; then
    takes_value=yes
  fi`;
  const booleans = [...new Set(booleanFlags(entries))].join(" ");
  if (shell === "bash") {
    return `# tessera completion for bash. Load it from ~/.bashrc:
#   source <(tessera completion bash)
_tessera() {
  local -a line=("\${COMP_WORDS[@]}")
  local cword=$COMP_CWORD cur="\${COMP_WORDS[COMP_CWORD]}"
  local TESSERA_BOOLEAN_FLAGS="${booleans}"
${lookup}
  if [[ -n "$takes_value" ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$choices" -- "$cur"))
  fi
}
complete -o default -F _tessera tessera
`;
  }
  return `#compdef tessera
# tessera completion for zsh. Save it as _tessera in a directory of $fpath (before compinit runs):
#   tessera completion zsh > ~/.zfunc/_tessera
_tessera() {
  local -a line=("\${words[@]}")
  local cword=$(( CURRENT - 1 ))
  local TESSERA_BOOLEAN_FLAGS="${booleans}"
  # Counted from 0 from here on, as in bash.
  setopt local_options ksh_arrays
${lookup}
  if [[ -n "$takes_value" ]]; then
    _files
  else
    compadd -- \${=choices}
  fi
}
if [[ "\${funcstack[1]}" == "_tessera" ]]; then
  _tessera "$@"
else
  compdef _tessera tessera
fi
`;
}

/** Flags that take no value: what follows them is another word to complete, not their value. */
function booleanFlags(entries: readonly (Command | Group)[]): string[] {
  const commands = entries.flatMap((entry) => ("commands" in entry ? entry.commands : [entry]));
  return [
    "--help",
    "--version",
    ...commands.flatMap((command) =>
      Object.entries(command.flags)
        .filter(([, flag]) => flag.type === "boolean")
        .map(([name]) => `--${name}`),
    ),
  ];
}

/** `tessera completion bash|zsh`; `entries` is every command, the completion command included. */
export function completionCommand(entries: () => readonly (Command | Group)[]): Command {
  return defineCommand({
    name: "completion",
    usage: "<bash|zsh>",
    summary: "Print a shell completion script for bash or zsh",
    description:
      "Completes commands, subcommands and flags; a flag's value completes as a file name. Generate it again\n" +
      "after an upgrade of Tessera.",
    operands: { min: 1, max: 1, name: "<bash|zsh>" },
    flags: {},
    examples: [
      "source <(tessera completion bash)            # in ~/.bashrc",
      "tessera completion zsh > ~/.zfunc/_tessera   # with ~/.zfunc in $fpath, before compinit",
    ],
    run: ({ operands: [shell], command }) => {
      if (shell !== "bash" && shell !== "zsh") {
        throw new UsageError(`unknown shell '${shell}': use bash or zsh`, command);
      }
      process.stdout.write(completionScript(shell, entries()));
      return Promise.resolve(0);
    },
  });
}
