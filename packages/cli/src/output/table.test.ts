import { describe, expect, it } from "vitest";
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
