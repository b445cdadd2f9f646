import { spawn } from "node:child_process";
import { createHash, timingSafeEqual } from "node:crypto";
import { DecryptionError } from "../../crypto/cipher.js";
import { MasterKeyProviderError, type MasterKeyProvider } from "./provider.js";
import type { CommandSettings } from "./settings.js";

/** `C`, then the command's output as it printed it. */
const FORMAT = 0x43;
/** The tenant key, then the SHA-256 of its context: what the KMS encrypts. */
const PAYLOAD_BYTES = 64;
/** A KMS ciphertext of 64 bytes is a few hundred bytes at most; more is not a wrapped key. */
const MAX_OUTPUT_BYTES = 16 * 1024;
/** Commands running at once: a cold start that needs many keys does not start hundreds of processes. */
const MAX_RUNNING = 4;

/**
 * A cloud KMS (or Vault's transit engine) through its own command-line tool, without its SDK in Tessera
 * (docs/keys.md#command). The wrap command reads the tenant key (with the digest of its context, so that a wrapped
 * key moved to another row does not open there, whatever the KMS offers for binding) on stdin and prints the
 * wrapped key; the unwrap command does the reverse. Each runs without a shell, in an environment of only the
 * listed variables, and is killed with everything it started when it overruns the timeout.
 */
export function commandProvider(
  settings: CommandSettings,
  environment: Readonly<Record<string, string | undefined>> = process.env,
): MasterKeyProvider {
  const env = Object.fromEntries(
    settings.env.flatMap((name) => (environment[name] === undefined ? [] : [[name, environment[name]]])),
  ) as Record<string, string>;
  let running = 0;
  const queue: (() => void)[] = [];
  const children = new Set<number>();
  let closed = false;

  async function run(which: "wrap" | "unwrap", input: Buffer): Promise<Buffer> {
    if (closed) throw new MasterKeyProviderError("unavailable", "the command provider is closed");
    // A finished command hands its place to the next waiting one.
    if (running < MAX_RUNNING) running += 1;
    else await new Promise<void>((resolve) => queue.push(resolve));
    try {
      return await runCommand(which, which === "wrap" ? settings.wrap : settings.unwrap, input, {
        env,
        timeoutMs: settings.timeoutMs,
        children,
      });
    } finally {
      const next = queue.shift();
      if (next === undefined) running -= 1;
      else next();
    }
  }

  const binary = settings.encoding === "binary";
  return {
    name: "command",
    keyVersion: `command:${settings.keyId}`,
    details: {
      key_id: settings.keyId,
      wrap_command: settings.wrap[0]!,
      unwrap_command: settings.unwrap[0]!,
      encoding: settings.encoding,
    },
    async wrap(key, context) {
      const payload = Buffer.concat([key, digest(context)]);
      const output = await run("wrap", binary ? payload : Buffer.from(payload.toString("base64")));
      const wrapped = binary ? output : Buffer.from(output.toString("latin1").trim(), "latin1");
      if (wrapped.length === 0 || (!binary && !/^[\x21-\x7e]+$/.test(wrapped.toString("latin1")))) {
        throw new MasterKeyProviderError(
          "key",
          `the wrap command printed ${wrapped.length === 0 ? "nothing" : "something other than one line of text"}` +
            ": check TESSERA_KMS_WRAP_COMMAND and TESSERA_KMS_ENCODING",
        );
      }
      return Buffer.concat([Buffer.of(FORMAT), wrapped]);
    },
    async unwrap(wrapped, context) {
      if (wrapped.length < 2 || wrapped[0] !== FORMAT) throw new DecryptionError();
      const output = await run("unwrap", wrapped.subarray(1));
      const payload = binary ? output : decodeBase64(output.toString("latin1").trim());
      if (payload === undefined || payload.length !== PAYLOAD_BYTES) {
        // Not an answer at all: a misconfigured command, or one whose KMS answered with something else. The
        // custody layer finds out which by unwrapping its probe.
        throw new Error(
          `the unwrap command printed ${payload === undefined ? "something that is not base64" : `${payload.length} bytes, not ${PAYLOAD_BYTES}`}`,
        );
      }
      if (!timingSafeEqual(payload.subarray(32), digest(context))) throw new DecryptionError();
      return Buffer.from(payload.subarray(0, 32));
    },
    close() {
      closed = true;
      for (const pid of children) killGroup(pid);
      return Promise.resolve();
    },
  };
}

/** The command's stdout, or an error that says why there is none (never stderr as it was printed). */
function runCommand(
  which: "wrap" | "unwrap",
  argv: readonly string[],
  input: Buffer,
  options: { env: Record<string, string>; timeoutMs: number; children: Set<number> },
): Promise<Buffer> {
  const [file, ...args] = argv as [string, ...string[]];
  const name = `the ${which} command (${file})`;
  return new Promise((resolve, reject) => {
    // detached: the command leads a process group of its own, so that a timeout kills what it started too (the
    // gcloud and az commands are scripts that start Python).
    const child = spawn(file, args, {
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
      shell: false,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let outputBytes = 0;
    let errorBytes = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.pid !== undefined) options.children.delete(child.pid);
      outcome();
    };
    const kill = () => {
      if (child.pid !== undefined) killGroup(child.pid);
    };
    const timer = setTimeout(() => {
      kill();
      settle(() =>
        reject(
          new MasterKeyProviderError("unavailable", `${name} did not finish within ${options.timeoutMs} ms`),
        ),
      );
    }, options.timeoutMs);
    if (child.pid !== undefined) options.children.add(child.pid);

    child.on("error", (error: NodeJS.ErrnoException) =>
      settle(() =>
        reject(
          error.code === "ENOENT" || error.code === "EACCES"
            ? new MasterKeyProviderError("module", `${name} cannot be started (${error.code})`)
            : new MasterKeyProviderError(
                "unavailable",
                `${name} failed to run (${error.code ?? error.name})`,
              ),
        ),
      ),
    );
    child.stdout.on("data", (chunk: Buffer) => {
      outputBytes += chunk.length;
      if (outputBytes > MAX_OUTPUT_BYTES) {
        kill();
        settle(() => reject(new Error(`${name} printed more than ${MAX_OUTPUT_BYTES} bytes`)));
      } else stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      // Only the first line is ever shown, scrubbed: enough of it is kept to find that line.
      if (errorBytes < 4096) stderr.push(chunk);
      errorBytes += chunk.length;
    });
    // A command that exits without reading its input closes the pipe: that is its answer, not a second failure.
    child.stdin.on("error", () => undefined);
    child.stdin.end(input);
    child.on("close", (code, signal) => {
      if (code === 0) {
        settle(() => resolve(Buffer.concat(stdout)));
        return;
      }
      const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
      const said = scrubbedFirstLine(Buffer.concat(stderr));
      settle(() => reject(new Error(`${name} ${how}${said === "" ? "" : `: ${said}`}`)));
    });
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Characters a key, a token or a ciphertext is written in: base64, base64url and hex. */
const KEY_LIKE = /[A-Za-z0-9+/=_-]+/g;
const SHOWN_CHARACTERS = 160;

/**
 * What Tessera repeats of a command's stderr (docs/keys.md#errors-from-a-command): its first non-empty line, with control
 * and non-ASCII characters replaced, every run of 32 or more key-like characters and every run of 12 or more that
 * holds a digit, `+`, `/` or `=` replaced by `[redacted]`, cut at 160 characters. A KMS tool's error ("An error
 * occurred (AccessDeniedException) when calling the Decrypt operation") survives; a key, a ciphertext or a token
 * it echoed (`--debug` prints request bodies) does not.
 */
export function scrubbedFirstLine(stderr: Buffer): string {
  const line =
    stderr
      .toString("utf8")
      .split(/\r?\n/)
      .find((each) => each.trim() !== "") ?? "";
  const scrubbed = line
    .replace(/[^\x20-\x7e]/g, "?")
    .replace(KEY_LIKE, (run) =>
      run.length >= 32 || (run.length >= 12 && /[0-9+/=]/.test(run)) ? "[redacted]" : run,
    )
    .trim();
  return scrubbed.length > SHOWN_CHARACTERS ? `${scrubbed.slice(0, SHOWN_CHARACTERS - 1)}…` : scrubbed;
}

function digest(context: string): Buffer {
  return createHash("sha256").update(context, "utf8").digest();
}

function decodeBase64(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text) && !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  return Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64");
}
