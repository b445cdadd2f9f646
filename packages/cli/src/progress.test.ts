import { describe, expect, it } from "vitest";
import { ProgressBar, formatDuration } from "./progress.js";

function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const fake = { isTTY, text: "", write: (chunk: string) => ((fake.text += chunk), true) };
  return fake as unknown as NodeJS.WriteStream & { text: string };
}

/** A clock the test moves by hand. */
function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("ProgressBar", () => {
  it("prints plain lines at the start, at each tenth (with rate and ETA) and at the end when not on a terminal", () => {
    const out = stream(false);
    const time = clock();
    const bar = new ProgressBar(20, "lines", { stream: out, now: time.now });
    bar.update(0);
    for (let done = 1; done <= 20; done++) {
      time.advance(500);
      bar.update(done);
    }
    bar.finish();
    const lines = out.text.trimEnd().split("\n");
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe(`[${".".repeat(30)}] 0/20 lines`);
    // Two lines a second: ten left take five seconds.
    expect(lines[5]).toBe(`[${"#".repeat(15)}${".".repeat(15)}] 10/20 lines  2.0 lines/s, ETA 5s`);
    expect(lines[10]).toBe(`[${"#".repeat(30)}] 20/20 lines`);
  });

  it("measures the rate over the recent past, so a slow start does not hold the ETA back", () => {
    const out = stream(false);
    const time = clock();
    const bar = new ProgressBar(1000, "tokens", { stream: out, now: time.now });
    bar.update(0);
    time.advance(60_000);
    bar.update(1);
    for (let done = 2; done <= 100; done++) {
      time.advance(100);
      bar.update(done);
    }
    expect(out.text.trimEnd().split("\n").at(-1)).toBe(
      `[###${".".repeat(27)}] 100/1000 tokens  10 tokens/s, ETA 1m30s`,
    );
  });

  it("puts notes on lines of their own, and ends a stopped bar where it stopped", () => {
    const out = stream(false);
    const time = clock();
    const bar = new ProgressBar(3, "tokens", { suffix: "tenant t1", stream: out, now: time.now });
    bar.update(0);
    bar.note("line 1: refused");
    time.advance(250);
    bar.update(1);
    bar.finish();
    expect(out.text).toBe(
      `[${".".repeat(30)}] 0/3 tokens  tenant t1\nline 1: refused\n` +
        `[${"#".repeat(10)}${".".repeat(20)}] 1/3 tokens  tenant t1  4.0 tokens/s, ETA 1s\n`,
    );
  });

  it("redraws in place on a terminal, a note above the bar", () => {
    const out = stream(true);
    const time = clock();
    const bar = new ProgressBar(2, "lines", { stream: out, now: time.now });
    bar.update(0);
    bar.note("line 1: refused");
    time.advance(1000);
    bar.update(2);
    bar.finish();
    const empty = `[${".".repeat(30)}] 0/2 lines`;
    const full = `[${"#".repeat(30)}] 2/2 lines`;
    expect(out.text).toBe(
      `\r${empty}\x1b[K\r\x1b[Kline 1: refused\n${empty}\r${full}\x1b[K\r${full}\x1b[K\n`,
    );
  });

  it("counts without a total, with the rate, and off a terminal prints a line at most every ten seconds", () => {
    const out = stream(false);
    const time = clock();
    const bar = new ProgressBar(undefined, "lines", { stream: out, now: time.now });
    bar.update(0);
    for (let done = 1; done <= 250; done++) {
      time.advance(100);
      bar.update(done);
    }
    bar.finish();
    expect(out.text).toBe(
      ["0 lines", "100 lines  10 lines/s", "200 lines  10 lines/s", "250 lines", ""].join("\n"),
    );
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0s"],
    [0.2, "1s"],
    [59, "59s"],
    [65, "1m05s"],
    [3599, "59m59s"],
    [7620, "2h07m"],
  ])("%s s is %s", (seconds, text) => expect(formatDuration(seconds)).toBe(text));
});
