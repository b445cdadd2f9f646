import type { Page } from "@tessera/sdk";
import { printJson, printJsonLine, printLine, printTable } from "./print.js";
import type { Column } from "./table.js";
import { toApiJson } from "../wire.js";

/** How one kind of resource is listed: as a table for people, as the API's JSON for scripts. */
export interface Listing<T> {
  /** Singular, as in "3 tokens". */
  readonly noun: string;
  readonly columns: readonly Column[];
  row(item: T): readonly string[];
  /** The item as the API returns it. */
  toJson(item: T): unknown;
}

/** One page: the API's page envelope as JSON, or a table with the page's place in the whole. */
export function printPage<T>(page: Page<T>, listing: Listing<T>, json: boolean | undefined): void {
  if (json === true) {
    printJson({
      pagination: toApiJson(page.pagination),
      data: page.data.map((item) => listing.toJson(item)),
    });
    return;
  }
  const { pageNumber, totalPages, totalItems } = page.pagination;
  printTable(
    listing.columns,
    page.data.map((item) => listing.row(item)),
  );
  printLine(`Page ${pageNumber} of ${Math.max(totalPages, 1)}, ${count(totalItems, listing.noun)}.`);
}

/**
 * Every page: as JSON, one item per line while the pages arrive (the whole need not fit in memory); as a table,
 * once all are in, since the column widths depend on every row.
 */
export async function printAll<T>(
  items: AsyncIterable<T>,
  listing: Listing<T>,
  json: boolean | undefined,
): Promise<void> {
  const rows: (readonly string[])[] = [];
  for await (const item of items) {
    if (json === true) printJsonLine(listing.toJson(item));
    else rows.push(listing.row(item));
  }
  if (json === true) return;
  printTable(listing.columns, rows);
  printLine(`${count(rows.length, listing.noun)}.`);
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
