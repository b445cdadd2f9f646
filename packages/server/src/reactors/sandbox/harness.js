// The program every reactor worker runs, inside Deno with no permission but public egress (see
// docs/reactors.md#why-a-deno-process-per-reactor). It reads NDJSON frames on stdin, loads one reactor's code in a
// CommonJS shim and runs it once per invocation. Every frame it writes carries the nonce the host sent first, so lines
// printed by reactor code (which shares this realm and this stdout) are never taken for frames.
//
// Reactor code runs in this realm and may replace globals (JSON.stringify, console, ...) for its own reasons; what
// the harness needs after the code has loaded is captured first, so that the protocol keeps working. This is
// robustness, not a boundary: code that sets out to can still observe its own worker (its nonce, the frames of its
// own invocations), which gains it nothing, because a worker serves one reactor, one invocation at a time.
//
// The first import of a `node:` module starts Deno's Node compatibility layer, which costs tens to hundreds of
// milliseconds. It is imported here, when the process starts, so that a pool's spare pays for it before any
// request does. `process` is Deno's global one, the object `require("process")` also gives (Node 16 code writes
// both); it holds no environment (--ignore-env) and no binding that does anything.
import { Buffer } from "node:buffer";

const process = globalThis.process;

const { stringify, parse } = { stringify: JSON.stringify, parse: JSON.parse };
const encoder = new TextEncoder();
const encode = encoder.encode.bind(encoder);
const decoder = new TextDecoder();
const decode = decoder.decode.bind(decoder);
const writeSync = Deno.stdout.writeSync.bind(Deno.stdout);
const reader = Deno.stdin.readable.getReader();
const read = reader.read.bind(reader);
const exit = Deno.exit.bind(Deno);
const PromiseCtor = Promise;
const ErrorCtor = Error;
const ObjectFreeze = Object.freeze;
const ObjectAssign = Object.assign;
const ObjectDefineProperty = Object.defineProperty;
const ObjectHasOwn = Object.hasOwn;
const ArrayIsArray = Array.isArray;
const StringCtor = String;
const MapCtor = Map;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const mapDelete = Map.prototype.delete;
const call = Function.prototype.call.bind(Function.prototype.call);
const SetCtor = Set;
const FunctionCtor = Function;
const ReflectConstruct = Reflect.construct;

/**
 * Takes IPv6 away from this process, on Linux, before any reactor code runs: a seccomp filter (installed on every
 * thread) makes socket(AF_INET6, ...) fail with EAFNOSUPPORT. Deno's `--deny-net` takes IPv4 ranges but no IPv6
 * ones, and IPv6 holds special-purpose space no reactor may reach (unique-local networks such as fd00::/8, NAT64,
 * 6to4, link-local neighbours); without IPv6 sockets none of it is reachable, and names with both kinds of
 * address are reached over IPv4. The host grants FFI for the C library alone, and the permission is revoked here,
 * once the filter is in place, so reactor code never has it. A worker that cannot install the filter exits (86)
 * rather than run code without it.
 */
function networkFilter(libcPath) {
  const AF_INET6 = 10;
  const EAFNOSUPPORT = 97;
  const arch = {
    x86_64: { audit: 0xc000003e, socket: 41, seccomp: 317 },
    aarch64: { audit: 0xc00000b7, socket: 198, seccomp: 277 },
  }[Deno.build.arch];
  if (arch === undefined) return false;
  // Classic BPF over struct seccomp_data: nr at offset 0, arch at 4, the first argument's low half at 16.
  const LD_W_ABS = 0x20;
  const JEQ_K = 0x15;
  const RET_K = 0x06;
  const RET_KILL_PROCESS = 0x80000000;
  const RET_ERRNO = 0x00050000;
  const RET_ALLOW = 0x7fff0000;
  const program = [
    [LD_W_ABS, 0, 0, 4],
    [JEQ_K, 1, 0, arch.audit],
    [RET_K, 0, 0, RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, 0],
    [JEQ_K, 0, 3, arch.socket],
    [LD_W_ABS, 0, 0, 16],
    [JEQ_K, 0, 1, AF_INET6],
    [RET_K, 0, 0, RET_ERRNO | EAFNOSUPPORT],
    [RET_K, 0, 0, RET_ALLOW],
  ];
  // Off the V8 heap (an ArrayBuffer's own store), so the kernel reads it where its address says.
  const filter = new Uint8Array(new ArrayBuffer(program.length * 8));
  const view = new DataView(filter.buffer);
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k, true);
  });
  const libc = Deno.dlopen(libcPath, {
    // memcpy answers its destination: the address of `filter`, for struct sock_fprog.
    memcpy: { parameters: ["buffer", "buffer", "usize"], result: "usize" },
    prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    syscall: { parameters: ["i64", "i64", "i64", "buffer"], result: "i64" },
  });
  try {
    const fprog = new Uint8Array(16);
    const header = new DataView(fprog.buffer);
    header.setUint16(0, program.length, true);
    header.setBigUint64(8, BigInt(libc.symbols.memcpy(filter, filter, 0n)), true);
    const PR_SET_NO_NEW_PRIVS = 38;
    const SECCOMP_SET_MODE_FILTER = 1n;
    const SECCOMP_FILTER_FLAG_TSYNC = 1n;
    if (libc.symbols.prctl(PR_SET_NO_NEW_PRIVS, 1n, 0n, 0n, 0n) !== 0) return false;
    const installed = libc.symbols.syscall(
      BigInt(arch.seccomp),
      SECCOMP_SET_MODE_FILTER,
      SECCOMP_FILTER_FLAG_TSYNC,
      fprog,
    );
    return installed === 0n;
  } finally {
    libc.close();
    Deno.permissions.revokeSync({ name: "ffi" });
  }
}

if (Deno.args[0] !== undefined) {
  let filtered = false;
  try {
    filtered = networkFilter(Deno.args[0]);
  } catch {
    filtered = false;
  }
  if (!filtered) Deno.exit(86);
}

// Node's globals that Node 16 code uses without requiring them. They are globals, not parameters of the
// CommonJS shim, exactly as under Node: code that declares its own (`const { Buffer } = require("buffer")`,
// `const process = require("process")`) shadows them, where a parameter of that name would be a syntax error.
for (const [name, value] of [
  ["Buffer", Buffer],
  ["process", process],
  ["global", globalThis],
]) {
  ObjectDefineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
}

// What reactor code must not reach, taken away before it runs. `Deno[Deno.internal]` holds Deno's core (its own
// timers, `evalContext`, ...); Web Workers would run code the harness cannot stop or clear (docs/reactors.md).
delete Deno[Deno.internal];
delete globalThis.Worker;

let nonce;
let exported;
let nextCall = 0;
const pendingCalls = new MapCtor();

/**
 * Timers started by reactor code live as long as the load or invocation that started them: a worker serves one
 * invocation at a time, and what one left ticking would run (and spend the worker's CPU) between invocations.
 * The globals are replaced before any reactor code runs, and every timer still pending when the load or the
 * invocation ends is cleared (clearTimers). Reactor code cannot reach the originals: `node:timers` is refused by
 * the import map and Deno's core is gone.
 */
const pendingTimers = new SetCtor();
const pendingImmediates = new SetCtor();
const setAdd = SetCtor.prototype.add;
const setDelete = SetCtor.prototype.delete;
const setForEach = SetCtor.prototype.forEach;
const setClear = SetCtor.prototype.clear;
const ReflectApply = Reflect.apply;

function trackTimers() {
  const { setTimeout, setInterval, clearTimeout, setImmediate, clearImmediate } = globalThis;
  const once = (pending, id, callback) =>
    typeof callback === "function"
      ? function (...args) {
          call(setDelete, pending, id.value);
          return ReflectApply(callback, this, args);
        }
      : callback;
  globalThis.setTimeout = function (callback, ...rest) {
    const id = {};
    id.value = ReflectApply(setTimeout, globalThis, [once(pendingTimers, id, callback), ...rest]);
    call(setAdd, pendingTimers, id.value);
    return id.value;
  };
  globalThis.setInterval = function (...args) {
    const id = ReflectApply(setInterval, globalThis, args);
    call(setAdd, pendingTimers, id);
    return id;
  };
  globalThis.clearTimeout = globalThis.clearInterval = function (id) {
    call(setDelete, pendingTimers, id);
    return ReflectApply(clearTimeout, globalThis, [id]);
  };
  globalThis.setImmediate = function (callback, ...rest) {
    const id = {};
    id.value = ReflectApply(setImmediate, globalThis, [once(pendingImmediates, id, callback), ...rest]);
    call(setAdd, pendingImmediates, id.value);
    return id.value;
  };
  globalThis.clearImmediate = function (immediate) {
    call(setDelete, pendingImmediates, immediate);
    return ReflectApply(clearImmediate, globalThis, [immediate]);
  };
  return () => {
    call(setForEach, pendingTimers, (id) => ReflectApply(clearTimeout, globalThis, [id]));
    call(setClear, pendingTimers);
    call(setForEach, pendingImmediates, (immediate) => ReflectApply(clearImmediate, globalThis, [immediate]));
    call(setClear, pendingImmediates);
  };
}

const clearTimers = trackTimers();

function send(frame) {
  frame.n = nonce;
  const bytes = encode(`${stringify(frame)}\n`);
  for (let written = 0; written < bytes.length;) written += writeSync(bytes.subarray(written));
}

/** The error classes reactor code throws to choose its HTTP answer (wire-format.md §7), under both names. */
function errorModule() {
  class ReactorError extends ErrorCtor {
    constructor(status, detail, errors) {
      super(detail);
      this.name = new.target.name;
      this.status = status;
      this.errors = errors;
    }
    toRFC7807() {
      return { detail: this.message, status: this.status, errors: this.errors };
    }
  }
  const simple = (name, status, detail) => {
    const Class = class extends ReactorError {
      constructor(errors) {
        super(status, detail, errors);
      }
    };
    ObjectDefineProperty(Class, "name", { value: name });
    return Class;
  };
  class CustomHttpResponseError extends ReactorError {
    constructor({ status, headers, body } = {}) {
      super(status, "Custom HTTP Response", undefined);
      this.headers = headers;
      this.body = body;
    }
  }
  return ObjectFreeze({
    BasisTheoryReactorError: ReactorError,
    ReactorError,
    AuthenticationError: simple("AuthenticationError", 401, "Authentication Failed"),
    AuthorizationError: simple("AuthorizationError", 403, "Forbidden"),
    BadRequestError: simple("BadRequestError", 400, "Bad Request"),
    InvalidPaymentMethodError: simple("InvalidPaymentMethodError", 402, "Invalid Payment Method"),
    InvalidReactorConfigurationError: simple(
      "InvalidReactorConfigurationError",
      400,
      "Invalid Reactor Configuration",
    ),
    RateLimitError: simple("RateLimitError", 429, "Rate Limit Exceeded"),
    ReactorRuntimeError: simple("ReactorRuntimeError", 500, "Reactor Runtime Error"),
    ServiceUnavailableError: simple("ServiceUnavailableError", 503, "Service Unavailable"),
    CustomHttpResponseError,
  });
}

const reactorErrors = errorModule();
/** Every class of errorModule() but their common base: each extends the base directly. */
const ERROR_CLASS_NAMES = Object.keys(reactorErrors).filter(
  (name) => reactorErrors[name] !== reactorErrors.ReactorError,
);

/**
 * The error class the host maps a thrown value by. Basis Theory's formulas SDK tells its classes apart with
 * instanceof, so a reactor's own subclass of BadRequestError still answers 400 under whatever name it has.
 */
function className(thrown) {
  for (const name of ERROR_CLASS_NAMES) if (thrown instanceof reactorErrors[name]) return name;
  return typeof thrown.name === "string" ? thrown.name : "Error";
}

/** What crosses back to the host about a thrown value: only data, never a stack (it names internal paths). */
function describeThrown(thrown) {
  if (thrown === null || typeof thrown !== "object") {
    return { name: "Error", message: thrown === undefined ? "" : StringCtor(thrown) };
  }
  const described = {
    name: className(thrown),
    message: typeof thrown.message === "string" ? thrown.message : StringCtor(thrown),
  };
  // Any value: the host decides what a status may be (custom-response.ts), and says what it refused.
  if (thrown.status !== undefined) described.status = thrown.status;
  // `new ReactorRuntimeError(caught)` is the usual way to wrap a failure, and an Error crosses JSON as `{}`:
  // wire-format §7 keeps its message, as `{error: [message]}` once the host normalises it.
  if (thrown.errors instanceof ErrorCtor) described.errors = StringCtor(thrown.errors.message);
  else if (thrown.errors !== undefined) described.errors = thrown.errors;
  if (thrown.headers !== undefined) described.headers = thrown.headers;
  if (thrown.body !== undefined) described.body = thrown.body;
  return described;
}

/**
 * `svc` and `bt`: every SDK call becomes an RPC frame; the host performs it as the reactor's Application. `bt`
 * carries the method names of the Basis Theory SDK that BT reactors get as `req.bt` (wire-format §7); the host
 * maps each onto the same API (reactors/bt-client.ts).
 */
function serviceStubs(invocation) {
  const rpc =
    (method) =>
    (...params) =>
      new PromiseCtor((resolve, reject) => {
        const id = ++nextCall;
        call(mapSet, pendingCalls, id, { resolve, reject });
        send({ t: "rpc", invocation, call: id, method, params });
      });
  const group = (name, methods) => {
    const object = {};
    for (const method of methods) object[method] = rpc(`${name}.${method}`);
    return ObjectFreeze(object);
  };
  return {
    svc: ObjectFreeze({
      tokens: group("tokens", ["create", "get", "list", "update", "delete", "search"]),
      tokenize: rpc("tokenize"),
      detokenize: rpc("detokenize"),
    }),
    bt: ObjectFreeze({
      tokens: group("bt.tokens", ["retrieve", "create", "update", "delete", "list", "search"]),
      tokenize: rpc("bt.tokenize"),
      detokenize: rpc("bt.detokenize"),
    }),
  };
}

function captureConsole(invocationOf) {
  const log =
    (level) =>
    (...values) => {
      const text = values.map((v) => (typeof v === "string" ? v : safeStringify(v))).join(" ");
      send({ t: "log", invocation: invocationOf(), level, text });
    };
  // Replaced method by method: Deno's Node compatibility layer extends the console object itself later.
  for (const [method, level] of [
    ["log", "info"],
    ["info", "info"],
    ["debug", "debug"],
    ["warn", "warn"],
    ["error", "error"],
    ["trace", "debug"],
  ]) {
    globalThis.console[method] = log(level);
  }
}

function safeStringify(value) {
  try {
    return stringify(value) ?? StringCtor(value);
  } catch {
    return StringCtor(value);
  }
}

/**
 * What Node 16's `require` returns for an npm package imported from Deno's cache: a CommonJS package's own
 * `module.exports` (Deno exposes it under that name), else an ES module's default export, else its namespace.
 */
function requiredExports(namespace) {
  return namespace["module.exports"] ?? namespace.default ?? namespace;
}

async function load({ code, modules, packages }) {
  const preloaded = new MapCtor();
  for (const name of modules) {
    if (name === "@tessera/reactor" || name === "@basis-theory/basis-theory-reactor-formulas-sdk-js") {
      call(mapSet, preloaded, name, reactorErrors);
    } else if (name === "process" || name === "node:process") {
      // The very object the shim passes as `process`, as under Node.
      call(mapSet, preloaded, name, process);
    } else if (ObjectHasOwn(packages, name)) {
      let loaded;
      try {
        // Deno's module loader reads its own cache: no read permission, and --cached-only fails at once.
        loaded = await import(packages[name]);
      } catch {
        // Deno's message names the cache layout and the registry; it stays here.
        throw new ErrorCtor(`The module '${name}' could not be loaded from this server's package cache`);
      }
      call(mapSet, preloaded, name, requiredExports(loaded));
    } else {
      const loaded = await import(name.startsWith("node:") ? name : `node:${name}`);
      call(mapSet, preloaded, name, loaded.default ?? loaded);
      call(mapSet, preloaded, name.replace(/^node:/, ""), loaded.default ?? loaded);
    }
  }
  const require = (name) => {
    const found = call(mapGet, preloaded, StringCtor(name));
    if (found === undefined) throw new ErrorCtor(`Cannot require '${name}': not an allowed module`);
    return found;
  };
  const module = { exports: {} };
  // The CommonJS shim: each parameter the code sees, beside its value. code-check.ts compiles saved code against
  // the same names (SHIM_PARAMETERS; code-check.test.ts holds this table to them).
  const shim = [
    ["exports", module.exports],
    ["require", require],
    ["module", module],
    ["__filename", "/reactor.js"],
    ["__dirname", "/"],
  ];
  const names = [];
  const values = [];
  for (let i = 0; i < shim.length; i++) {
    names[i] = shim[i][0];
    values[i] = shim[i][1];
  }
  names[shim.length] = code;
  // A function body is parsed on its own: the code cannot close the shim early.
  const wrapped = ReflectConstruct(FunctionCtor, names);
  try {
    ReflectApply(wrapped, module.exports, values);
  } finally {
    clearTimers();
  }
  exported = module.exports;
  if (typeof exported !== "function") throw new ErrorCtor("The reactor code must export a function");
}

let current;

async function invoke({ invocation, args, configuration, svc }) {
  current = invocation;
  try {
    const stubs = svc ? serviceStubs(invocation) : { svc: null, bt: null };
    const result = await exported({ args, configuration, svc: stubs.svc, bt: stubs.bt });
    if (result !== undefined && (result === null || typeof result !== "object" || ArrayIsArray(result))) {
      throw new ErrorCtor("The reactor must return an object such as { raw } or { tokenize }");
    }
    const value = {};
    if (result?.raw !== undefined) value.raw = result.raw;
    if (result?.tokenize !== undefined) value.tokenize = result.tokenize;
    clearTimers();
    send({ t: "result", invocation, ok: true, value });
  } catch (thrown) {
    clearTimers();
    send({ t: "result", invocation, ok: false, error: describeThrown(thrown) });
  }
}

function settleCall({ call: id, ok, value, error }) {
  const pending = call(mapGet, pendingCalls, id);
  if (pending === undefined) return;
  call(mapDelete, pendingCalls, id);
  if (ok) pending.resolve(value);
  else pending.reject(ObjectFreeze(ObjectAssign(new ErrorCtor(error.message), error)));
}

async function handle(frame) {
  switch (frame.t) {
    case "load":
      try {
        await load(frame);
        send({ t: "loaded" });
      } catch (thrown) {
        send({ t: "load-error", error: describeThrown(thrown) });
      }
      return;
    case "invoke":
      return invoke(frame);
    case "rpc-result":
      return settleCall(frame);
    default:
      return;
  }
}

async function main() {
  captureConsole(() => current);
  let buffered = "";
  for (;;) {
    const { value, done } = await read();
    if (done) exit(0);
    buffered += decode(value, { stream: true });
    for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (nonce === undefined) {
        nonce = line;
        // Everything above has run, the Node compatibility layer included: the worker is ready for code.
        send({ t: "ready" });
        continue;
      }
      // Frames are handled one after the other, except an invocation, which waits on its own RPC results.
      const frame = parse(line);
      if (frame.t === "invoke") void handle(frame);
      else await handle(frame);
    }
  }
}

await main();
