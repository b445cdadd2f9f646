// The Dockerfile, .dockerignore and docker-compose.yml checked against the repository (issue 16). There is no
// Docker engine where the tests run, so no image is built: what can be checked without one is, here.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type ignoreFactory from "@balena/dockerignore";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadConfig, openApiDocument } from "@tessera/server";
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";

// A CommonJS module whose own types declare an ES default export: required, as it is at run time.
const dockerignore = createRequire(import.meta.url)(
  "@balena/dockerignore",
) as (typeof ignoreFactory)["default"];

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");
/** Where the Dockerfile puts the repository (WORKDIR /app in both stages). */
const APP = "/app/";

interface Stage {
  readonly image: string;
  readonly name: string | null;
  readonly instructions: readonly Instruction[];
}

interface ComposeService {
  readonly build?: string | { readonly context?: string; readonly dockerfile?: string };
  readonly environment?: Readonly<Record<string, string>>;
  readonly secrets?: readonly string[];
  readonly ports?: readonly string[];
}

interface Compose {
  readonly services: Readonly<Record<string, ComposeService>>;
  readonly secrets?: Readonly<Record<string, { readonly file: string }>>;
}

const dockerfile = DockerfileParser.parse(read("Dockerfile"));
const ignored = dockerignore().add(read(".dockerignore"));
const compose = parseYaml(read("docker-compose.yml")) as Compose;

/** ARG defaults declared before the first FROM: the only variables a FROM line can use. */
const globalArgs = new Map(
  dockerfile
    .getInitialARGs()
    .flatMap((arg) => (arg.getProperty() === null ? [] : [arg.getProperty()!]))
    .map((property) => [property.getName(), property.getValue() ?? ""]),
);
const expand = (text: string, args: ReadonlyMap<string, string>) =>
  text.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (_, braced?: string, bare?: string) => args.get(braced ?? bare!) ?? "",
  );

const stages: Stage[] = [];
for (const instruction of dockerfile.getInstructions()) {
  if (instruction.getKeyword() === "FROM") {
    const from = instruction as unknown as { getImage(): string | null; getBuildStage(): string | null };
    stages.push({
      image: expand(from.getImage() ?? "", globalArgs),
      name: from.getBuildStage(),
      instructions: [],
    });
  } else if (stages.length > 0) {
    (stages.at(-1)!.instructions as Instruction[]).push(instruction);
  }
}
const final = stages.at(-1)!;

function ofKind(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.getKeyword() === keyword);
}

/** `COPY [--from=…] <src>… <dest>`: the sources, and the stage they come from (undefined: the build context). */
function copies(stage: Stage): { from: string | undefined; sources: string[] }[] {
  return ofKind(stage, "COPY").map((instruction) => {
    const copy = instruction as unknown as { getFromFlag(): { getValue(): string | null } | null };
    const args = instruction.getArguments().map((argument) => argument.getValue());
    return { from: copy.getFromFlag()?.getValue() ?? undefined, sources: args.slice(0, -1) };
  });
}

function jsonForm(instruction: Instruction): string[] {
  const json = instruction as unknown as { getJSONStrings(): { getJSONValue(): string }[] };
  return json.getJSONStrings().map((argument) => argument.getJSONValue());
}

/** The final stage's environment: its ENV lines with the stage's ARG defaults substituted. */
function imageEnvironment(): Record<string, string> {
  const args = new Map(globalArgs);
  const env: Record<string, string> = {};
  for (const instruction of final.instructions) {
    const keyword = instruction.getKeyword();
    if (keyword === "ARG") {
      const property = (
        instruction as unknown as { getProperty(): { getName(): string; getValue(): string | null } }
      ).getProperty();
      args.set(property.getName(), property.getValue() ?? "");
    } else if (keyword === "ENV") {
      const properties = (
        instruction as unknown as { getProperties(): { getName(): string; getValue(): string | null }[] }
      ).getProperties();
      for (const property of properties) env[property.getName()] = expand(property.getValue() ?? "", args);
    }
  }
  return env;
}

/** The names loadConfig reads from `env`, recorded as it reads them; it throws if the values are not valid. */
function namesReadByConfig(env: Readonly<Record<string, string>>): Set<string> {
  const names = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === "string") names.add(name);
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
  loadConfig(recording, "/app");
  return names;
}

/** `${NAME:?message}` and `${NAME}` as compose expands them, given a value for each. */
const composeValue = (text: string) => text.replace(/\$\{(\w+)(:\?[^}]*)?\}/g, "secret0value");

// Not about a store: checked once, in the SQLite project.
describe.skipIf(process.env.TESSERA_TEST_STORE === "postgres")("the Docker image", () => {
  it("starts from node:24-bookworm-slim pinned by digest, in every stage", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) {
      expect(stage.image).toMatch(/^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
    }
  });

  it("copies from the build context only what exists and .dockerignore lets through", () => {
    const fromContext = stages.flatMap((stage) => copies(stage).filter((copy) => copy.from === undefined));
    expect(fromContext.length).toBeGreaterThan(0);
    for (const source of fromContext.flatMap((copy) => copy.sources)) {
      expect(existsSync(path.join(ROOT, source)), source).toBe(true);
      if (path.normalize(source) !== ".") expect(ignored.ignores(path.normalize(source)), source).toBe(false);
    }
  });

  it("keeps out of the build context no file the build needs, and every secret and local state", () => {
    const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).trim().split("\n");
    const needed = tracked.filter(
      (file) =>
        /^(package\.json|package-lock\.json|\.npmrc|tsconfig(\.build)?\.json)$/.test(file) ||
        /^packages\/[^/]+\/(package\.json|tsconfig\.build\.json|bin\/.+)$/.test(file) ||
        (/^packages\/[^/]+\/src\//.test(file) && !file.endsWith(".test.ts")),
    );
    expect(needed).toContain("packages/server/src/reactors/sandbox/harness.js");
    expect(needed.filter((file) => ignored.ignores(file))).toEqual([]);
    const secrets = [
      ".env",
      "packages/server/.env",
      "data/tessera.db",
      "data/master.key",
      "secrets/master.key",
      "secrets/postgres-password",
      compose.secrets?.tessera_master_key?.file.replace(/^\.\//, "") ?? "missing",
    ];
    expect(secrets.filter((file) => !ignored.ignores(file))).toEqual([]);
  });

  it("copies from the build stage only what the install and the build produce, and all that the start needs", () => {
    const build = stages.find((stage) => stage.name !== null && stage !== final);
    const fromBuild = copies(final).filter((copy) => copy.from === build?.name);
    expect(fromBuild.length).toBeGreaterThan(0);
    expect(copies(final).filter((copy) => copy.from !== build?.name)).toEqual([]);
    const copied = fromBuild
      .flatMap((copy) => copy.sources)
      .map((source) => {
        expect(source.startsWith(APP), source).toBe(true);
        return source.slice(APP.length);
      });
    // This checkout was installed (`npm install` builds it), so the build stage's `npm ci` makes the same paths.
    for (const file of copied) expect(existsSync(path.join(ROOT, file)), file).toBe(true);
    const isCopied = (file: string) => copied.some((dir) => file === dir || file.startsWith(`${dir}/`));
    // No TypeScript source at all: the image runs the compiled files.
    expect(copied.filter((file) => /(^|\/)src(\/|$)/.test(file))).toEqual([]);

    // What each package resolves to without the tessera-source condition: its compiled entry points.
    for (const name of ["cli", "sdk", "server"]) {
      const manifest = JSON.parse(read(`packages/${name}/package.json`)) as {
        exports?: Record<string, Record<string, string>>;
        imports?: Record<string, Record<string, string>>;
        bin?: Record<string, string>;
      };
      const targets = [
        ...Object.values(manifest.exports ?? {}).map((target) => target.default),
        ...Object.values(manifest.imports ?? {}).map((target) => target.default),
        ...Object.values(manifest.bin ?? {}),
      ];
      for (const target of targets) {
        const file = path.posix.join(`packages/${name}`, target!);
        expect(isCopied(file), file).toBe(true);
        expect(existsSync(path.join(ROOT, file)), file).toBe(true);
      }
    }
    // Read beside the compiled modules at run time: the reactor harness, and the packages cached for reactors.
    expect(isCopied("packages/server/dist/reactors/sandbox/harness.js")).toBe(true);
    expect(existsSync(path.join(ROOT, "packages/server/dist/reactors/sandbox/harness.js"))).toBe(true);
    expect(isCopied("packages/server/node_modules/.cache/tessera-reactor-modules")).toBe(true);
  });

  it("starts the compiled CLI: plain node resolves the entry point to dist/, never to the sources", () => {
    const [entrypoint] = ofKind(final, "ENTRYPOINT");
    const [command] = ofKind(final, "CMD");
    expect(jsonForm(entrypoint!)).toEqual(["node", "packages/cli/bin/tessera.js"]);
    expect(jsonForm(command!)).toEqual(["serve"]);
    const resolved = execFileSync(
      process.execPath,
      ["--input-type=module", "-e", 'process.stdout.write(import.meta.resolve("#main"))'],
      { cwd: path.join(ROOT, "packages/cli"), encoding: "utf8", env: { PATH: process.env.PATH ?? "" } },
    );
    expect(resolved).toBe(pathToFileURL(path.join(ROOT, "packages/cli/dist/main.js")).href);
  });

  it("checks its health on a real route of the app that needs no API key, on the port it exposes", async () => {
    const [healthcheck] = ofKind(final, "HEALTHCHECK");
    const content = healthcheck!.getRawArgumentsContent() ?? "";
    const command = JSON.parse(content.slice(content.indexOf("CMD") + 3)) as string[];
    const routes = [...command.join(" ").matchAll(/'(\/[^']*)'/g)].map((match) => match[1]);
    expect(routes).toEqual(["/readyz"]);
    const document = (await openApiDocument()) as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(document.paths["/readyz"]?.get?.security).toEqual([]);

    const env = imageEnvironment();
    const exposed = ofKind(final, "EXPOSE").flatMap((expose) =>
      expose.getArguments().map((a) => a.getValue()),
    );
    expect(exposed).toEqual([env.TESSERA_PORT]);
    expect(command.join(" ")).toContain("process.env.TESSERA_PORT || 3000");
    expect(compose.services.tessera?.ports).toEqual([`127.0.0.1:3000:${env.TESSERA_PORT}`]);
  });

  it("sets only settings the server reads, and together with docker-compose.yml a valid configuration", () => {
    const service = compose.services.tessera!;
    expect(
      service.build === "." || (typeof service.build === "object" && service.build.context === "."),
    ).toBe(true);
    const composeEnv = Object.fromEntries(
      Object.entries(service.environment ?? {}).map(([name, value]) => [name, composeValue(value)]),
    );
    const env = { ...imageEnvironment(), ...composeEnv };
    const settings = Object.keys(env).filter((name) => name.startsWith("TESSERA_"));
    expect(settings.length).toBeGreaterThan(5);
    const consumed = namesReadByConfig(env);
    expect(settings.filter((name) => !consumed.has(name))).toEqual([]);
    expect(env.NODE_ENV).toBe("production");
    // The master key file is the compose secret of that name, mounted where Docker mounts secrets.
    const [secret] = service.secrets ?? [];
    expect(env.TESSERA_MASTER_KEY_FILE).toBe(`/run/secrets/${secret}`);
    expect(compose.secrets?.[secret!]?.file).toBeDefined();
    expect(new URL(env.TESSERA_DATABASE_URL!).hostname).toBe("postgres");
    expect(Object.keys(compose.services)).toContain("postgres");
  });
});
