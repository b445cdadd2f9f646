import vm from "node:vm";
import { BUILTIN_MODULES, DEFAULT_MODULES, ERROR_MODULES, type NpmModule } from "./modules.js";

/**
 * The CommonJS shim's parameters; harness.js compiles the code as the body of a function taking them. Node's own
 * wrapper takes exactly these; `Buffer`, `process` and `global` are globals there and in the harness, so that Node 16
 * code may declare them itself (`const { Buffer } = require("buffer")`).
 */
export const SHIM_PARAMETERS = ["exports", "require", "module", "__filename", "__dirname"];

export interface CodeProblem {
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

export type CodeCheck = { ok: true; modules: string[] } | { ok: false; problems: CodeProblem[] };

// `require("x")` with a literal name; anything else cannot be resolved ahead of time and fails at run time.
const REQUIRE = /\brequire\s*\(\s*(["'`])([^"'`\n]+)\1\s*\)/g;

/** Every name `require` serves: the built-ins (also as `node:…`), the error classes and the npm packages. */
function allowedNames(packages: readonly NpmModule[]): Set<string> {
  return new Set<string>([
    ...BUILTIN_MODULES,
    ...BUILTIN_MODULES.map((m) => `node:${m}`),
    ...ERROR_MODULES,
    ...packages.map((m) => m.name),
  ]);
}

/**
 * Compiles reactor code as the harness will, the body of a function (V8 only parses it; nothing runs), and lists
 * the modules it requires so that the worker loads them before the code runs (`require` is synchronous; Deno's
 * module loading is not). A body is parsed on its own, so code cannot close the function early and escape it.
 * `packages` are the npm packages the server offers (TESSERA_REACTOR_MODULES).
 */
export function checkReactorCode(code: string, packages: readonly NpmModule[] = DEFAULT_MODULES): CodeCheck {
  const allowed = allowedNames(packages);
  try {
    vm.compileFunction(code, SHIM_PARAMETERS, { filename: "reactor.js" });
  } catch (error) {
    return { ok: false, problems: [syntaxProblem(error)] };
  }
  const modules = new Set<string>();
  const problems: CodeProblem[] = [];
  for (const match of code.matchAll(REQUIRE)) {
    const name = match[2]!;
    if (allowed.has(name)) modules.add(name);
    else problems.push({ message: `'${name}' is not an allowed module`, ...position(code, match.index) });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, modules: [...modules].sort() };
}

function syntaxProblem(error: unknown): CodeProblem {
  const message = error instanceof Error ? error.message : String(error);
  // V8 puts "reactor.js:<line>" on the first stack line and a caret under the column on the third.
  const stack = error instanceof Error ? (error.stack ?? "") : "";
  const [where, source, caret] = stack.split("\n");
  const line = Number(/reactor\.js:(\d+)/.exec(where ?? "")?.[1]);
  if (!Number.isInteger(line) || line < 1) return { message };
  const caretColumn = caret !== undefined && /^\s*\^/.test(caret) ? caret.indexOf("^") + 1 : undefined;
  if (caretColumn === undefined || source === undefined) return { message, line };
  return { message, line, column: caretColumn };
}

function position(code: string, index: number): { line: number; column: number } {
  const before = code.slice(0, index);
  const line = before.split("\n").length;
  return { line, column: index - before.lastIndexOf("\n") };
}
