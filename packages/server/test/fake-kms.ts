// A stand-in for a cloud KMS's command-line tool, for the `command` master key provider's tests: AES-256-GCM
// under a key read from a file, run by Node itself (type stripping, no loader) as the provider runs a KMS's CLI.
//
//   node fake-kms.ts encrypt|decrypt <key file> <state dir> <base64|binary>
//
// The state directory steers it: `mode` holds ok (the default), fail (exit 7 with an error line that echoes a
// secret), hang (never answers, and starts a child that does not either), garbage (prints what is not a wrapped
// key) or short (answers with too few bytes); each run appends its operation to `calls`, the names of the variables
// it was given to `env` and its pid (and its child's) to `pids`.
import { spawn } from "node:child_process";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";

const [operation, keyFile, state, encoding] = process.argv.slice(2) as [string, string, string, string];
const key = Buffer.from(readFileSync(keyFile, "utf8").trim(), "hex");
const mode = existsSync(path.join(state, "mode"))
  ? readFileSync(path.join(state, "mode"), "utf8").trim()
  : "ok";

appendFileSync(path.join(state, "calls"), `${operation}\n`);
appendFileSync(path.join(state, "env"), `[${Object.keys(process.env).sort().join(",")}]\n`);
appendFileSync(path.join(state, "pids"), `${process.pid}\n`);

const input = readFileSync(0);
const decode = (bytes: Buffer) =>
  encoding === "binary" ? bytes : Buffer.from(bytes.toString("latin1"), "base64");
const encode = (bytes: Buffer) => (encoding === "binary" ? bytes : `${bytes.toString("base64")}\n`);

if (mode === "fail") {
  process.stderr.write(
    `An error occurred (AccessDeniedException) when calling the ${operation} operation: key ` +
      `${randomBytes(32).toString("base64")} plaintext ${input.toString("latin1").slice(0, 40)}\nTraceback line 2\n`,
  );
  process.exit(7);
} else if (mode === "hang") {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  appendFileSync(path.join(state, "pids"), `${child.pid}\n`);
  setInterval(() => undefined, 1000);
} else if (mode === "garbage") {
  process.stdout.write(operation === "encrypt" ? "" : "not base64 at all!\n");
} else if (mode === "short") {
  process.stdout.write(encode(randomBytes(10)));
} else if (operation === "encrypt") {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const sealed = Buffer.concat([cipher.update(decode(input)), cipher.final()]);
  process.stdout.write(encode(Buffer.concat([iv, cipher.getAuthTag(), sealed])));
} else {
  const blob = decode(input);
  const decipher = createDecipheriv("aes-256-gcm", key, blob.subarray(0, 12));
  decipher.setAuthTag(blob.subarray(12, 28));
  try {
    const plain = Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]);
    process.stdout.write(encode(plain));
  } catch {
    process.stderr.write(
      "An error occurred (InvalidCiphertextException) when calling the Decrypt operation\n",
    );
    process.exit(3);
  }
}
