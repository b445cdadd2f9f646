import { describe, expect, it } from "vitest";
import { ProgressBar } from "./progress.js";

function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const fake = { isTTY, text: "", write: (chunk: string) => ((fake.text += chunk), true) };
  return fake as unknown as NodeJS.WriteStream & { text: string };
}

describe("ProgressBar", () => {
  it("prints plain lines at the start, at each tenth and at the end when not on a terminal", () => {
    const out = stream(false);
    const bar = new ProgressBar(20, "lines", "", out);
    for (let done = 0; done <= 20; done++) bar.update(done);
    bar.finish();
    const lines = out.text.trimEnd().split("\n");
    expect(lines).toHaveLength(11);
    expect(lines[0]).toBe(`[${".".repeat(30)}] 0/20 lines`);
    expect(lines[5]).toBe(`[${"#".repeat(15)}${".".repeat(15)}] 10/20 lines`);
    expect(lines[10]).toBe(`[${"#".repeat(30)}] 20/20 lines`);
  });

  it("puts notes on lines of their own, and ends a stopped bar where it stopped", () => {
    const out = stream(false);
    const bar = new ProgressBar(3, "tokens", "tenant t1", out);
    bar.update(0);
    bar.note("line 1: refused");
    bar.update(1);
    bar.finish();
    expect(out.text).toBe(
      `[${".".repeat(30)}] 0/3 tokens  tenant t1\nline 1: refused\n[${"#".repeat(10)}${".".repeat(20)}] 1/3 tokens  tenant t1\n`,
    );
  });

  it("redraws in place on a terminal, a note above the bar", () => {
    const out = stream(true);
    const bar = new ProgressBar(2, "lines", "", out);
    bar.update(0);
    bar.note("line 1: refused");
    bar.update(2);
    bar.finish();
    const empty = `[${".".repeat(30)}] 0/2 lines`;
    const full = `[${"#".repeat(30)}] 2/2 lines`;
    expect(out.text).toBe(
      `\r${empty}\x1b[K\r\x1b[Kline 1: refused\n${empty}\r${full}\x1b[K\r${full}\x1b[K\n`,
    );
  });
});
