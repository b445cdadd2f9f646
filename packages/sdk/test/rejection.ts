import { expect } from "vitest";

/** The error a promise rejects with, checked to be of `type`. */
export async function rejectionOf<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected a ${type.name}, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(type);
  return outcome.error as E;
}
