export interface Style {
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
}

const PLAIN: Style = { bold: (text) => text, dim: (text) => text };
const ANSI: Style = { bold: (text) => `\x1b[1m${text}\x1b[22m`, dim: (text) => `\x1b[2m${text}\x1b[22m` };

/** Emphasis only for a person at a terminal: never in a pipe or a file, nor with NO_COLOR (no-color.org) set. */
export function styleFor(stream: NodeJS.WriteStream): Style {
  const wanted = stream.isTTY && (process.env.NO_COLOR ?? "") === "" && process.env.TERM !== "dumb";
  return wanted ? ANSI : PLAIN;
}
