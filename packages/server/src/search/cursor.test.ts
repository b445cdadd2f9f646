import { randomBytes, randomUUID } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createCursors, CursorError, type CursorBinding } from "./cursor.js";

const place = { createdAt: "2026-01-01T00:00:00.000Z", id: "tok_1" };

describe("v2 cursors", () => {
  const cursors = createCursors(randomBytes(32));
  const application = randomUUID();
  const session = randomUUID();
  const base: CursorBinding = {
    tenantId: randomUUID(),
    applicationId: application,
    sessionId: undefined,
    walk: "q",
  };

  it("open only for the caller they were issued to: the Application, or one session of it", () => {
    const bySession = cursors.seal(place, { ...base, sessionId: session });
    expect(cursors.open(bySession, { ...base, sessionId: session })).toEqual(place);
    // The Application's own key, another session of it, and a session of another Application are other callers.
    for (const sessionId of [undefined, randomUUID()])
      expect(() => cursors.open(bySession, { ...base, sessionId })).toThrow(CursorError);
    expect(() =>
      cursors.open(bySession, { ...base, applicationId: randomUUID(), sessionId: session }),
    ).toThrow(CursorError);
    const byApplication = cursors.seal(place, base);
    expect(cursors.open(byApplication, base)).toEqual(place);
    expect(() => cursors.open(byApplication, { ...base, sessionId: session })).toThrow(CursorError);
  });

  it("refuse any binding that differs in one field", () => {
    const field = fc.constantFrom("tenantId", "applicationId", "sessionId", "walk");
    fc.assert(
      fc.property(field, fc.uuid(), fc.boolean(), (name, other, issuedToSession) => {
        const issued = { ...base, sessionId: issuedToSession ? session : undefined };
        const cursor = cursors.seal(place, issued);
        const changed = { ...issued, [name]: name === "walk" ? `${issued.walk} ` : other };
        expect(() => cursors.open(cursor, changed)).toThrow(CursorError);
        expect(cursors.open(cursor, issued)).toEqual(place);
      }),
    );
  });
});
