// Plain-text tables for the terminal: columns padded to their widest cell, a rule under the header.
export function formatTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: readonly string[]) =>
    row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ");
  return [line(head), widths.map((width) => "-".repeat(width)).join("-|-"), ...rows.map(line)].join("\n");
}

export function ms(value: number): string {
  return value.toFixed(2);
}

export function mib(kib: number): string {
  return (kib / 1024).toFixed(1);
}
