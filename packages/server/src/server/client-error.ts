import { STATUS_CODES, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyBaseLogger } from "fastify";
import { AppError, toProblem, type ErrorCode } from "./errors.js";

const MALFORMED_LINE = "The request line is not valid HTTP/1.1.";
const MALFORMED_HEADER =
  "A header is malformed: names and values may not hold control characters (CR, LF, NUL), nor names spaces.";
const BAD_LENGTH =
  "Content-Length is invalid, repeated with different values, or sent beside Transfer-Encoding.";
const BAD_CHUNKS = "Transfer-Encoding is invalid, sent beside Content-Length, or its chunks are malformed.";

/** What each parser error a client can cause tells it: a fixed text, never anything taken from the request. */
const PROBLEMS = new Map<string, [ErrorCode, string]>([
  [
    "HPE_HEADER_OVERFLOW",
    ["header-fields-too-large", "The request's headers exceed the server's 16 KiB limit."],
  ],
  ["ERR_HTTP_REQUEST_TIMEOUT", ["request-timeout", "The request did not arrive in full in time."]],
  ["HPE_CHUNK_EXTENSIONS_OVERFLOW", ["payload-too-large", "The body's chunk extensions are too large."]],
  ["HPE_INVALID_METHOD", ["malformed-request", MALFORMED_LINE]],
  ["HPE_INVALID_URL", ["malformed-request", MALFORMED_LINE]],
  ["HPE_INVALID_VERSION", ["malformed-request", MALFORMED_LINE]],
  ["HPE_INVALID_CONSTANT", ["malformed-request", MALFORMED_LINE]],
  ["HPE_INVALID_HEADER_TOKEN", ["malformed-request", MALFORMED_HEADER]],
  ["HPE_CR_EXPECTED", ["malformed-request", MALFORMED_HEADER]],
  ["HPE_LF_EXPECTED", ["malformed-request", MALFORMED_HEADER]],
  ["HPE_UNEXPECTED_SPACE", ["malformed-request", MALFORMED_HEADER]],
  ["HPE_INVALID_CONTENT_LENGTH", ["malformed-request", BAD_LENGTH]],
  ["HPE_UNEXPECTED_CONTENT_LENGTH", ["malformed-request", BAD_LENGTH]],
  ["HPE_INVALID_CHUNK_SIZE", ["malformed-request", BAD_CHUNKS]],
  ["HPE_INVALID_TRANSFER_ENCODING", ["malformed-request", BAD_CHUNKS]],
]);

function problemFor(code: string | undefined): AppError {
  const [errorCode, detail] = PROBLEMS.get(code ?? "") ?? [
    "malformed-request",
    "The request is not valid HTTP/1.1.",
  ];
  return new AppError(errorCode, detail);
}

/**
 * Fastify's `clientErrorHandler`, for the requests Node's HTTP parser refuses before Fastify sees them: a control
 * character in a header, headers over Node's 16 KiB limit, a malformed request line or Content-Length, a request
 * too slow to arrive. Fastify's default answers those in a JSON format of its own; here they are the problem+json
 * of every other error. Nothing of the request is quoted, answered or logged (the error carries its raw bytes,
 * which may hold an API key), and the connection is closed: the parser cannot tell where a next request would
 * start.
 */
export function answerClientError(
  error: Error & { code?: string },
  socket: Socket,
  log: FastifyBaseLogger,
): void {
  // A reset connection has no one left to answer (Node's own handler skips it too); a connection already answered
  // may report more parser errors for the bytes that keep arriving, and gets one answer only.
  if (error.code === "ECONNRESET" || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const problem = problemFor(error.code);
  log.debug({ code: error.code, status: problem.status }, "client error refused");
  // As Node's own handler does: a response already under way on this connection (a pipelined request before the
  // bad one) must not get these bytes in the middle of its own.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
  if (socket.writable && inFlight?.headersSent !== true) {
    const body = JSON.stringify(toProblem(problem, undefined));
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
        "Content-Type: application/problem+json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        "Connection: close\r\n\r\n" +
        body,
    );
  }
  // Closing at once while the client is still sending (64 KB of headers) resets the connection, and the client's
  // stack may drop the answer it has not read yet (Node 24 does). So: end our side after the answer, and close
  // for good a little later, when the client has had time to read it.
  socket.end();
  setTimeout(() => socket.destroy(), CLOSE_AFTER_MS).unref();
}

const CLOSE_AFTER_MS = 1000;
const answered = new WeakSet<Socket>();
