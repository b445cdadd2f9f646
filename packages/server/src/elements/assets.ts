import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { gzipSync } from "node:zlib";

/**
 * The built files of `@tessera/elements` (its dist/, written by its build at `npm install`), read once at start
 * and held in memory: a handful of small files, served from a fixed map, so no request names a file on disk.
 */

export const ASSET_ROLES = ["library", "frame", "asset", "demo-page", "demo-asset"] as const;
export type AssetRole = (typeof ASSET_ROLES)[number];

export interface Asset {
  /** The URL path it is served at. */
  readonly url: string;
  readonly role: AssetRole;
  readonly contentType: string;
  readonly body: Buffer;
  readonly gzipped: Buffer;
  /** A digest of the body, for ETag. */
  readonly digest: string;
}

export interface ElementAssets {
  /** The package's version and a digest of its files, shown in the docs' budgets and in logs. */
  readonly version: string;
  readonly build: string;
  readonly files: readonly Asset[];
}

/** Where the built package is, or undefined when the package is not installed. */
export function elementsDistDir(): string | undefined {
  try {
    const manifest = createRequire(import.meta.url).resolve("@tessera/elements/package.json");
    return path.join(path.dirname(manifest), "dist");
  } catch {
    return undefined;
  }
}

/** The URL path of a file of the build: `v1/…` under /elements/v1/, `demo.html` as /elements/demo. */
function urlOf(file: string): string {
  return file === "demo.html" ? "/elements/demo" : `/elements/${file}`;
}

/**
 * Reads the build named by `dir`/manifest.json; undefined when there is none (the package was not built). A
 * manifest that names a file outside dir, or one that cannot be read, is an error: a broken install.
 */
export async function loadElementAssets(dir: string | undefined): Promise<ElementAssets | undefined> {
  if (dir === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(path.join(dir, "manifest.json"), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const manifest = JSON.parse(text) as {
    version?: unknown;
    build?: unknown;
    files?: Record<string, { role?: unknown; type?: unknown }>;
  };
  if (
    typeof manifest.version !== "string" ||
    typeof manifest.build !== "string" ||
    manifest.files === undefined
  ) {
    throw new Error(`${dir}/manifest.json is not an Elements build manifest`);
  }
  const files: Asset[] = [];
  for (const [file, entry] of Object.entries(manifest.files)) {
    const role = ASSET_ROLES.find((known) => known === entry.role);
    if (
      !/^(v1\/|demo\/)?[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(file) ||
      role === undefined ||
      typeof entry.type !== "string"
    ) {
      throw new Error(`${dir}/manifest.json: ${file} is not a file Elements serves`);
    }
    const body = await readFile(path.join(dir, file));
    files.push({
      url: urlOf(file),
      role,
      contentType: entry.type,
      body,
      gzipped: gzipSync(body, { level: 9 }),
      digest: createHash("sha256").update(body).digest("base64url").slice(0, 22),
    });
  }
  return { version: manifest.version, build: manifest.build, files };
}
