import { TesseraConnectionError, TesseraError } from "@tessera/sdk";
import { describe, expect, it } from "vitest";
import {
  BadInput,
  CommandFailure,
  ConfigurationError,
  EXIT,
  MasterKeyRefused,
  ReactorResponse,
  ServerUnreachable,
  UsageError,
  WaitTimedOut,
  explain,
} from "./failure.js";

const URL = "http://127.0.0.1:3000";

function connectionError(cause: unknown, timedOut = false): TesseraConnectionError {
  return new TesseraConnectionError(`GET ${URL}/tokens failed`, { cause, timedOut });
}

describe("explain", () => {
  it.each([
    [
      new UsageError("missing <id>", "tessera tokens get"),
      EXIT.usage,
      "missing <id> (run 'tessera tokens get --help' for usage)",
    ],
    [
      new ConfigurationError("no API key: set SVC_API_KEY or pass --key"),
      EXIT.config,
      "no API key: set SVC_API_KEY or pass --key",
    ],
    [new CommandFailure("the migration failed"), EXIT.failure, "the migration failed"],
    [
      new MasterKeyRefused('token "tessera" refused the PIN (CKR_PIN_INCORRECT)', EXIT.masterKeyLogin),
      82,
      'token "tessera" refused the PIN (CKR_PIN_INCORRECT)',
    ],
    [new BadInput("the line is not valid JSON"), EXIT.refused, "the line is not valid JSON"],
    [
      new WaitTimedOut("the webhook was not delivered within 5 s"),
      EXIT.unreachable,
      "the webhook was not delivered within 5 s",
    ],
    [
      new ServerUnreachable(
        URL,
        connectionError(
          new TypeError("fetch failed", {
            cause: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }),
          }),
        ),
      ),
      EXIT.unreachable,
      `cannot reach ${URL} (ECONNREFUSED): is the server running? set TESSERA_URL or --url`,
    ],
    [
      new ServerUnreachable(
        URL,
        connectionError(new TypeError("fetch failed", { cause: new Error("bad port") })),
      ),
      EXIT.unreachable,
      `cannot reach ${URL} (bad port): is the server running? set TESSERA_URL or --url`,
    ],
    [
      new ServerUnreachable(URL, connectionError(new Error("aborted"), true)),
      EXIT.unreachable,
      `${URL} did not answer in time: it may be overloaded, or TESSERA_URL / --url may point elsewhere (the request may still have been carried out)`,
    ],
    [
      new TesseraError(400, {
        title: "Validation failed",
        detail: "The request has invalid fields; see errors.",
        errors: {
          name: ["must not be blank"],
          "rules[0].priority": ["must be at least 1", "must be unique"],
        },
      }),
      EXIT.refused,
      "the server refused the request (400 Validation failed): The request has invalid fields; see errors: " +
        "name: must not be blank; rules[0].priority: must be at least 1, must be unique",
    ],
    [
      new TesseraError(409, { title: "Conflict", detail: "A token with id x already exists." }),
      EXIT.refused,
      "the server refused the request (409 Conflict): A token with id x already exists",
    ],
    [
      new TesseraError(500, {
        title: "Internal server error",
        detail: "Quote request id req-1 to the operator.",
      }),
      EXIT.failure,
      "the server failed (500 Internal server error): Quote request id req-1 to the operator",
    ],
    [
      new TesseraError(400, {
        title: "Reactor error",
        detail: "Bad Request",
        errors: { card: ["\u001b[2Jexpired\nsee\u009b"] },
      }),
      EXIT.refused,
      "the server refused the request (400 Reactor error): Bad Request: card: \\u001b[2Jexpired\\u000asee\\u009b",
    ],
    [
      new TesseraError(301, ""),
      EXIT.failure,
      expect.stringMatching(/^the server answered 301, a redirect, /),
    ],
    [
      new ReactorResponse(418, { brewing: true }),
      EXIT.refused,
      'the reactor answered 418 with its own response: {"brewing":true}',
    ],
    [new ReactorResponse(503, "x".repeat(600)), EXIT.failure, expect.stringMatching(/: "x{498}…$/)],
    // A proxy's page rather than a problem: only the status is known.
    [new TesseraError(502, "<html>Bad gateway</html>"), EXIT.failure, "the server failed (502)"],
    [
      new RangeError("boom"),
      EXIT.failure,
      "unexpected error: boom (set TESSERA_DEBUG=1 to see where it came from)",
    ],
  ])("%s → exit %i", (error, code, message) => {
    expect(explain(error)).toEqual({ code, message });
  });
});
