import { createHash } from "node:crypto";
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildInstallCache, isInstallCacheCurrent, type InstallCacheRequest } from "./module-cache.js";
import { denoBinary } from "./setup.js";

// The install step does not touch the store, so it runs in one project only.
const ONCE = process.env.TESSERA_TEST_STORE === "postgres";

const PACKAGE = { name: "tessera-modes", version: "1.0.0" } as const;

/** One ustar entry: a 512-byte header, then the data padded to 512 bytes. */
function tarEntry(name: string, mode: number, data: string): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) =>
    header.write(value, offset, length, "ascii");
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, "0");
  const body = Buffer.from(data);
  field(0, 100, name);
  field(100, 8, octal(mode, 8));
  field(108, 8, octal(0, 8));
  field(116, 8, octal(0, 8));
  field(124, 12, octal(body.length, 12));
  field(136, 12, octal(Math.floor(Date.now() / 1000), 12));
  field(148, 8, " ".repeat(8));
  field(156, 1, "0");
  field(257, 6, "ustar");
  field(263, 2, "00");
  let sum = 0;
  for (const byte of header) sum += byte;
  field(148, 8, `${octal(sum, 7)}\0`);
  const padding = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([header, body, padding]);
}

/** A package tarball as some are published: files readable by their owner's group only (0640), a 0750 script. */
function tarball(): Buffer {
  return gzipSync(
    Buffer.concat([
      tarEntry("package/package.json", 0o640, JSON.stringify({ ...PACKAGE, main: "index.js" })),
      tarEntry("package/index.js", 0o640, "module.exports = 42;\n"),
      tarEntry("package/bin/run", 0o750, "#!/bin/sh\n"),
      Buffer.alloc(1024),
    ]),
  );
}

/** Every file and directory under `root` with its permission bits. */
function modes(root: string): { path: string; directory: boolean; mode: number }[] {
  const found: { path: string; directory: boolean; mode: number }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const full = path.join(dir, entry);
      const stat = lstatSync(full);
      if (stat.isSymbolicLink()) continue;
      found.push({
        path: path.relative(root, full),
        directory: stat.isDirectory(),
        mode: stat.mode & 0o7777,
      });
      if (stat.isDirectory()) walk(full);
    }
  };
  walk(root);
  return found;
}

describe.skipIf(ONCE)("the install cache of reactor npm packages", () => {
  let dir: string;
  let registry: http.Server;
  let registryUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tessera-module-cache-"));
    const tgz = tarball();
    // A registry of one package on loopback, standing for npm: Deno fetches its metadata, then the tarball.
    registry = http.createServer((req, res) => {
      if (req.url === `/${PACKAGE.name}`) {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            name: PACKAGE.name,
            "dist-tags": { latest: PACKAGE.version },
            versions: {
              [PACKAGE.version]: {
                ...PACKAGE,
                dist: {
                  tarball: `${registryUrl}${PACKAGE.name}/-/${PACKAGE.name}-${PACKAGE.version}.tgz`,
                  shasum: createHash("sha1").update(tgz).digest("hex"),
                  integrity: `sha512-${createHash("sha512").update(tgz).digest("base64")}`,
                },
              },
            },
          }),
        );
      } else if (req.url === `/${PACKAGE.name}/-/${PACKAGE.name}-${PACKAGE.version}.tgz`) {
        res.end(tgz);
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
    await new Promise<void>((resolve) => registry.listen(0, "127.0.0.1", resolve));
    registryUrl = `http://127.0.0.1:${(registry.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    await new Promise((resolve) => registry?.close(resolve));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("is readable by everyone once built, whatever the tarballs' modes and the installer's umask", async () => {
    const request: InstallCacheRequest = {
      deno: denoBinary(),
      denoVersion: "test",
      modules: [PACKAGE],
      registry: registryUrl,
      cacheDir: path.join(dir, "cache"),
    };
    const umask = process.umask(0o077);
    try {
      await buildInstallCache(request);
    } finally {
      process.umask(umask);
    }
    expect(isInstallCacheCurrent(request)).toBe(true);
    const entries = modes(request.cacheDir);
    const file = (name: string) => entries.find((e) => e.path.endsWith(path.join(PACKAGE.version, name)));
    // Deno kept the tarball's modes; the install step opened them up.
    expect(file("index.js")?.mode).toBe(0o644);
    expect(file("package.json")?.mode).toBe(0o644);
    expect(file(path.join("bin", "run"))?.mode).toBe(0o755);
    expect(entries.find((e) => e.path === "manifest.json")?.mode).toBe(0o644);
    for (const entry of entries) {
      // a+rX, and writable by the owner only.
      expect(entry.mode & (entry.directory ? 0o555 : 0o444), entry.path).toBe(
        entry.directory ? 0o555 : 0o444,
      );
      expect(entry.mode & 0o7022, entry.path).toBe(0);
    }
    expect(lstatSync(request.cacheDir).mode & 0o777).toBe(0o755);
  });
});
