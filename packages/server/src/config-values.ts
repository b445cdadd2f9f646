import { isIPv4 } from "node:net";

/** The environment as the configuration reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

export function parseInteger(
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  name: string,
  problems: string[],
): number {
  const text = nonEmpty(raw);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    problems.push(`${name} must be an integer from ${min} to ${max}`);
    return fallback;
  }
  return value;
}

export function parseBoolean(raw: string | undefined, name: string, problems: string[]): boolean {
  const text = nonEmpty(raw)?.trim().toLowerCase();
  if (text === undefined || text === "false") return false;
  if (text === "true") return true;
  problems.push(`${name} must be true or false`);
  return false;
}

export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

/** localhost, ::1 or 127.0.0.0/8. */
export function isLoopback(host: string): boolean {
  const name = host.trim().toLowerCase();
  return name === "localhost" || name === "::1" || (isIPv4(name) && name.startsWith("127."));
}
