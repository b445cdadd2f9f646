import { describe, expect, it } from "vitest";
import stringWidth from "string-width";
import { formatDetails, formatTable } from "./table.js";
import type { Style } from "./style.js";

const PLAIN: Style = { bold: (text) => text, dim: (text) => text };
const MARKED: Style = { bold: (text) => `<${text}>`, dim: (text) => `(${text})` };

describe("formatTable", () => {
  it("aligns columns on the widest cell, cuts long cells and leaves no trailing spaces", () => {
    const table = formatTable(
      [{ header: "ID" }, { header: "NAME", max: 8 }, { header: "NOTE" }],
      [
        ["1", "a very long name", ""],
        ["22", "short", "x"],
      ],
      PLAIN,
    );
    expect(table).toBe(["ID  NAME      NOTE", "1   a very …", "22  short     x", ""].join("\n"));
  });

  it("emphasizes the header after padding, so the alignment holds", () => {
    expect(formatTable([{ header: "A" }, { header: "B" }], [["xyz", "1"]], MARKED)).toBe(
      "<A  >  <B>\nxyz  1\n",
    );
  });

  it("shows control characters escaped, so a name cannot drive the terminal", () => {
    const table = formatTable([{ header: "NAME" }], [["evil\u001b[2Jname\nnext"]], PLAIN);
    expect(table).toBe("NAME\nevil\\u001b[2Jname\\u000anext\n");
  });
});

describe("formatDetails", () => {
  it("lines up labels and leaves out absent values", () => {
    expect(
      formatDetails(
        [
          ["id", "1"],
          ["expires_at", undefined],
          ["name", "x\ty"],
        ],
        MARKED,
      ),
    ).toBe("(id  )  1\n(name)  x\\u0009y\n");
  });
});

describe("formatTable with wide and combining characters", () => {
  /** Where each column starts on the screen, in terminal columns: what the eye sees line up. */
  const starts = (line: string, cells: readonly string[]) =>
    cells.map((cell) => stringWidth(line.slice(0, line.indexOf(cell))));

  it("lines up CJK, emoji and accented names by what the terminal shows", () => {
    const rows = [
      ["東京支店", "active", "#1"],
      ["👩‍👩‍👧 family", "paused", "#2"],
      ["e\u0301te\u0301", "active", "#3"],
      ["plain", "active", "#4"],
    ];
    const table = formatTable([{ header: "NAME" }, { header: "STATUS" }, { header: "NOTE" }], rows, PLAIN);
    const lines = table.trimEnd().split("\n");
    expect(lines[0]).toBe("NAME       STATUS  NOTE");
    rows.forEach((row, i) => expect(starts(lines[i + 1]!, row)).toEqual([0, 11, 19]));
    // Four characters, eight columns: padded to the widest name (the family, nine columns) with one space.
    expect(lines[1]).toBe("東京支店   active  #1");
    // Five code points, three columns: the combining accents take none.
    expect(lines[3]).toBe("e\u0301te\u0301        active  #3");
  });

  it("cuts wide text by columns, never through a grapheme", () => {
    const table = formatTable(
      [{ header: "NAME", max: 6 }, { header: "X" }],
      [
        ["東京支店東京", "1"],
        ["👩‍👩‍👧👩‍👩‍👧👩‍👩‍👧👩‍👩‍👧", "2"],
      ],
      PLAIN,
    );
    const lines = table.trimEnd().split("\n");
    // Two wide characters and the ellipsis: five columns, as a sixth would not fit another wide one.
    expect(lines[1]).toBe("東京…  1");
    expect(lines[2]).toBe("👩‍👩‍👧👩‍👩‍👧…  2");
  });
});
