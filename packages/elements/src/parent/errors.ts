import type { FrameErrorCode } from "../shared/protocol.js";

export type ElementsErrorCode =
  | FrameErrorCode
  /** A call with a bad argument: an unknown option, a style property off the allow-list, a selector with no match. */
  | "invalid-argument"
  /** The element is not mounted (or was unmounted before it answered). */
  | "not-mounted"
  | "already-mounted"
  /** The frame loaded without saying hello: most often the page's origin is not allowed to embed it. */
  | "frame-blocked"
  | "timeout"
  /** The vault answered with an error status; `status` and `body` (problem+json) say which. */
  | "api-error";

/** Every failure of the library: a `code` to branch on, and for vault errors its status and problem body. */
export class ElementsError extends Error {
  override readonly name = "ElementsError";

  constructor(
    readonly code: ElementsErrorCode,
    message: string,
    readonly details: {
      readonly status?: number;
      readonly body?: unknown;
      /** The ids of the elements at fault (`incomplete-elements`, `element-missing`). */
      readonly elements?: readonly string[];
    } = {},
  ) {
    super(message);
  }

  get status(): number | undefined {
    return this.details.status;
  }

  get body(): unknown {
    return this.details.body;
  }
}
