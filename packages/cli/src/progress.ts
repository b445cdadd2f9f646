const WIDTH = 30;
const REDRAW_MS = 100;
/** Without a known end there are no tenths: a plain line is printed at most this often instead. */
const UNBOUNDED_LINE_MS = 10_000;
/** The rate is measured over this much of the recent past, so that a slow start does not skew the ETA for long. */
const RATE_WINDOW_MS = 10_000;
const SAMPLE_MS = 100;

export interface ProgressOptions {
  /** Follows the count, before the rate, e.g. "tenant <id>". */
  readonly suffix?: string;
  readonly stream?: NodeJS.WriteStream;
  /** Milliseconds, for the rate and the ETA; tests pass their own. */
  readonly now?: () => number;
}

/**
 * A progress bar on stderr, so stdout stays clean for the command's output (`--json` included). On a terminal it
 * is redrawn in place (at most every 100 ms); anywhere else (a log file, CI) it prints a plain line at the start,
 * at each tenth and at the end, so a log shows the progress without thousands of lines. While it runs it shows
 * the rate and, when the total is known, the time left; the first and the last line have neither (nothing
 * measured yet, nothing left). With no total (a pipe, read once), it counts and shows the rate, and off a
 * terminal prints a line every 10 s.
 */
export class ProgressBar {
  readonly #total: number | undefined;
  readonly #unit: string;
  readonly #suffix: string;
  readonly #stream: NodeJS.WriteStream;
  readonly #now: () => number;
  /** Recent (time, done) samples, oldest first: the rate is measured across them. */
  readonly #samples: { at: number; done: number }[] = [];
  #done = 0;
  #drawnAt = 0;
  #tenth = -1;
  #printedAt = Number.NEGATIVE_INFINITY;
  #printed = -1;

  /** `unit` names what is counted ("tokens", "lines"); `total` is undefined when the end is not known. */
  constructor(total: number | undefined, unit: string, options: ProgressOptions = {}) {
    this.#total = total;
    this.#unit = unit;
    this.#suffix = options.suffix ?? "";
    this.#stream = options.stream ?? process.stderr;
    this.#now = options.now ?? Date.now;
  }

  update(done: number): void {
    this.#done = done;
    const now = this.#now();
    this.#sample(now, done);
    if (this.#stream.isTTY) {
      if (now - this.#drawnAt >= REDRAW_MS || done === this.#total) {
        this.#drawnAt = now;
        this.#stream.write(`\r${this.#bar(now)}\x1b[K`);
      }
      return;
    }
    if (this.#total === undefined) {
      if (now - this.#printedAt >= UNBOUNDED_LINE_MS) this.#print(now);
      return;
    }
    const tenth = this.#total === 0 ? 10 : Math.floor((done * 10) / this.#total);
    if (tenth !== this.#tenth) {
      this.#tenth = tenth;
      this.#print(now);
    }
  }

  /** A message (a failed line, say) printed above the bar rather than through it. */
  note(text: string): void {
    if (!this.#stream.isTTY) {
      this.#stream.write(`${text}\n`);
      return;
    }
    this.#stream.write(`\r\x1b[K${text}\n${this.#bar(this.#now())}`);
  }

  /** Leaves the finished bar on its own line, without rate or ETA: the summary that follows says how it went. */
  finish(): void {
    if (this.#stream.isTTY) this.#stream.write(`\r${this.#bar(undefined)}\x1b[K\n`);
    else if (this.#printed !== this.#done) this.#stream.write(`${this.#bar(undefined)}\n`);
  }

  #print(now: number): void {
    this.#printedAt = now;
    this.#printed = this.#done;
    this.#stream.write(`${this.#bar(now)}\n`);
  }

  #sample(now: number, done: number): void {
    const last = this.#samples.at(-1);
    // A few samples a second are plenty, and keep the list short at thousands of updates a second.
    if (last === undefined || now - last.at >= SAMPLE_MS) this.#samples.push({ at: now, done });
    // Samples older than the window go, but one before the latest stays, for something to measure from.
    while (this.#samples.length > 2 && now - this.#samples[0]!.at > RATE_WINDOW_MS) this.#samples.shift();
  }

  /** Per second, over the recent past; undefined until something is done over a measurable time. */
  #rate(now: number): number | undefined {
    const first = this.#samples[0];
    if (first === undefined || now <= first.at || this.#done <= first.done) return undefined;
    return ((this.#done - first.done) * 1000) / (now - first.at);
  }

  /** `now` undefined: the line without rate and ETA. */
  #bar(now: number | undefined): string {
    const total = this.#total;
    const running = now !== undefined && this.#done > 0 && (total === undefined || this.#done < total);
    const rate = running ? this.#rate(now) : undefined;
    const pace = [
      ...(rate === undefined ? [] : [`${formatRate(rate)} ${this.#unit}/s`]),
      ...(rate === undefined || total === undefined
        ? []
        : [`ETA ${formatDuration((total - this.#done) / rate)}`]),
    ].join(", ");
    const suffix = [this.#suffix, pace]
      .filter((part) => part !== "")
      .map((part) => `  ${part}`)
      .join("");
    if (total === undefined) return `${this.#done} ${this.#unit}${suffix}`;
    const filled = total === 0 ? WIDTH : Math.round((Math.min(this.#done, total) / total) * WIDTH);
    return `[${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${this.#done}/${total} ${this.#unit}${suffix}`;
  }
}

function formatRate(perSecond: number): string {
  return perSecond >= 10 ? String(Math.round(perSecond)) : perSecond.toFixed(1);
}

/** `42s`, `3m05s`, `2h07m`: short, and steady in width while it counts down. */
export function formatDuration(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds));
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, "0")}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")}m`;
}
