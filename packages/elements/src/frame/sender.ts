import { isJsonValue, type JsonValue } from "../shared/json.js";
import { placeValues, revealsValue } from "../shared/placement.js";
import {
  PROTOCOL,
  type Collect,
  type Collected,
  type FieldValue,
  type FrameErrorCode,
  type Result,
  type Send,
} from "../shared/protocol.js";
import type { Reading } from "../shared/field.js";

/** How long the sending frame waits for its sibling frames' values. */
const COLLECT_TIMEOUT_MS = 5_000;

export interface SenderDeps {
  /** This frame's id and current reading. */
  readonly element: string;
  readonly read: () => Reading;
  /** The key the page configured; undefined before `configure`. */
  readonly key: () => string | undefined;
  /** `POST` targets resolve against this: the vault this frame was served by. */
  readonly apiBase: URL;
  readonly reply: (result: Result) => void;
}

type Answer = Collected;

/** Answers a sibling's `collect` for this frame's own value, to that sibling only. */
export function answerCollect(collect: Collect, element: string, reading: Reading): Answer | undefined {
  if (!collect.elements.includes(element)) return undefined;
  const base = { protocol: PROTOCOL, kind: "collected", request: collect.request, element } as const;
  if (reading.value !== undefined) return { ...base, value: reading.value };
  return { ...base, refused: reading.state.empty ? "empty" : reading.state.valid ? "incomplete" : "invalid" };
}

/**
 * The sending side: gathers the referred values from this frame and its siblings (frames of the vault's origin
 * in the same page), places them by the placement rules, sends the body to the vault this frame came from, and
 * returns the answer to the page unless it shows an entered value.
 */
export function createSender(deps: SenderDeps) {
  const pending = new Map<
    string,
    { remaining: Set<string>; answers: Map<string, Answer>; done: () => void }
  >();

  function collect(request: string, wanted: readonly string[]): Promise<Map<string, Answer>> {
    const answers = new Map<string, Answer>();
    const own = answerCollect(
      { protocol: PROTOCOL, kind: "collect", request, elements: [...wanted] },
      deps.element,
      deps.read(),
    );
    if (own !== undefined) answers.set(deps.element, own);
    const others = new Set(wanted.filter((id) => id !== deps.element));
    if (others.size === 0) return Promise.resolve(answers);
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        pending.delete(request);
        resolve(answers);
      };
      const timer = setTimeout(finish, COLLECT_TIMEOUT_MS);
      pending.set(request, { remaining: others, answers, done: finish });
      const message: Collect = { protocol: PROTOCOL, kind: "collect", request, elements: [...others] };
      // Every frame of the page is asked; only documents of the vault's origin receive it (targetOrigin).
      const frames = window.parent.frames;
      for (let index = 0; index < frames.length; index++) {
        const frame = frames[index];
        if (frame !== undefined && frame !== window) frame.postMessage(message, location.origin);
      }
    });
  }

  /** A sibling's answer; the caller has checked its origin, its window and its shape. */
  function collected(answer: Collected): void {
    const waiting = pending.get(answer.request);
    if (waiting === undefined || !waiting.remaining.delete(answer.element)) return;
    waiting.answers.set(answer.element, answer);
    if (waiting.remaining.size === 0) waiting.done();
  }

  function fail(request: string, code: FrameErrorCode, message: string, elements?: readonly string[]): void {
    deps.reply({
      kind: "result",
      request,
      error: { code, message },
      ...(elements !== undefined && elements.length > 0 && { elements: [...elements] }),
    });
  }

  const inFlight = new Set<string>();

  async function send(message: Send): Promise<void> {
    // A request id names one answer: a second request under the same id is dropped, not answered twice.
    if (inFlight.has(message.request)) return;
    inFlight.add(message.request);
    try {
      await sendOnce(message);
    } finally {
      inFlight.delete(message.request);
    }
  }

  async function sendOnce(message: Send): Promise<void> {
    const key = deps.key();
    if (key === undefined) return fail(message.request, "invalid-request", "The field is not configured.");
    const wanted = [...new Set(message.refs.map((ref) => ref.element))];
    const answers = await collect(message.request, wanted);
    const missing = wanted.filter((id) => !answers.has(id));
    if (missing.length > 0) {
      return fail(
        message.request,
        "element-missing",
        "A referred field is not mounted in this page.",
        missing,
      );
    }
    const values = new Map<string, FieldValue>();
    const unusable: string[] = [];
    for (const [id, answer] of answers) {
      if ("value" in answer) values.set(id, answer.value);
      else unusable.push(id);
    }
    if (unusable.length > 0) {
      return fail(
        message.request,
        "incomplete-elements",
        "A referred field is empty, incomplete or invalid.",
        unusable,
      );
    }
    const placed = placeValues(message.endpoint, message.body, message.refs, values);
    if (!placed.ok) return fail(message.request, "invalid-request", placed.message);

    let response: Response;
    try {
      response = await fetch(new URL(message.endpoint, deps.apiBase), {
        method: "POST",
        headers: { "SVC-API-KEY": key, "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(placed.body),
        // The vault's own origin and nowhere else: no redirect is followed, no cookie or referrer is sent.
        mode: "same-origin",
        credentials: "omit",
        redirect: "error",
        referrerPolicy: "no-referrer",
        cache: "no-store",
      });
    } catch {
      return fail(message.request, "network", "The vault could not be reached.");
    }
    let body: JsonValue;
    try {
      const parsed: unknown = JSON.parse(await response.text());
      if (!isJsonValue(parsed)) throw new TypeError("not JSON");
      body = parsed;
    } catch {
      return fail(
        message.request,
        "bad-response",
        `The vault answered ${response.status} without a JSON body.`,
      );
    }
    if (revealsValue(body, [...values.values()])) {
      return fail(
        message.request,
        "response-withheld",
        "The vault's answer shows an entered value, so it is not passed to the page: give the key a token:create " +
          "rule that masks or redacts.",
      );
    }
    deps.reply({ kind: "result", request: message.request, status: response.status, body });
  }

  return {
    send,
    collected,
    answer: (request: Collect, reading: Reading) => answerCollect(request, deps.element, reading),
  };
}
