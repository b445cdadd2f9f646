const WIDTH = 30;
const REDRAW_MS = 100;

/**
 * A progress bar on stderr, so stdout stays clean for the command's output. On a terminal it is redrawn in place
 * (at most every 100 ms); anywhere else (a log file, CI) it prints a plain line at the start, at each tenth and at
 * the end, so a log shows the progress without thousands of lines.
 */
export class ProgressBar {
  readonly #total: number;
  readonly #unit: string;
  readonly #suffix: string;
  readonly #stream: NodeJS.WriteStream;
  #done = 0;
  #drawnAt = 0;
  #tenth = -1;
  #printed = -1;

  /** `unit` names what is counted ("tokens", "lines"); `suffix` follows the count, e.g. "tenant <id>". */
  constructor(total: number, unit: string, suffix = "", stream: NodeJS.WriteStream = process.stderr) {
    this.#total = total;
    this.#unit = unit;
    this.#suffix = suffix;
    this.#stream = stream;
  }

  update(done: number): void {
    this.#done = done;
    if (this.#stream.isTTY) {
      const now = Date.now();
      if (now - this.#drawnAt >= REDRAW_MS || done === this.#total) {
        this.#drawnAt = now;
        this.#stream.write(`\r${this.#bar()}\x1b[K`);
      }
      return;
    }
    const tenth = this.#total === 0 ? 10 : Math.floor((done * 10) / this.#total);
    if (tenth !== this.#tenth) {
      this.#tenth = tenth;
      this.#printed = done;
      this.#stream.write(`${this.#bar()}\n`);
    }
  }

  /** A message (a failed line, say) printed above the bar rather than through it. */
  note(text: string): void {
    if (!this.#stream.isTTY) {
      this.#stream.write(`${text}\n`);
      return;
    }
    this.#stream.write(`\r\x1b[K${text}\n${this.#bar()}`);
  }

  /** Leaves the finished bar on its own line. */
  finish(): void {
    if (this.#stream.isTTY) this.#stream.write(`\r${this.#bar()}\x1b[K\n`);
    else if (this.#printed !== this.#done) this.#stream.write(`${this.#bar()}\n`);
  }

  #bar(): string {
    const filled =
      this.#total === 0 ? WIDTH : Math.round((Math.min(this.#done, this.#total) / this.#total) * WIDTH);
    const suffix = this.#suffix === "" ? "" : `  ${this.#suffix}`;
    return `[${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${this.#done}/${this.#total} ${this.#unit}${suffix}`;
  }
}
