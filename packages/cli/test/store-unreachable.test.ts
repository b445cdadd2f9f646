import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { STORE } from "../../server/test/harness.js";
import { findPostgresBin, freePort, startCluster, type Cluster } from "../../server/test/postgres-cluster.js";
import { killAll, run } from "./run-cli.js";

const POSTGRES_BIN = findPostgresBin();
const PASSWORD = "the-right-password";

/**
 * A database that cannot be used at start (issue 16): one line naming where and why, and an exit code a
 * supervisor can act on: 69 (EX_UNAVAILABLE) when waiting may be enough, 78 (EX_CONFIG) when the configuration
 * must change. PostgreSQL only: it runs once, in the postgres project, with a cluster of its own that asks for a
 * password.
 */
describe.skipIf(STORE !== "postgres" || POSTGRES_BIN === undefined)(
  "a store that cannot be used at start",
  () => {
    let cluster: Cluster;
    let dir: string;
    let port: string;

    beforeAll(async () => {
      cluster = await startCluster(POSTGRES_BIN!, { password: PASSWORD });
      port = new URL(cluster.url).port;
      dir = mkdtempSync(path.join(tmpdir(), "tessera-unreachable-"));
    });

    afterEach(killAll);

    afterAll(() => {
      killAll();
      cluster?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    const start = (command: string, databaseUrl: string) =>
      run(
        [command],
        {
          TESSERA_DATABASE_URL: databaseUrl,
          TESSERA_DATA_DIR: dir,
          TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
          TESSERA_PORT: "0",
        },
        dir,
      );

    // Seven starts of the CLI at once: slow on a loaded two-core machine.
    it(
      "names the host, the port and the reason on one line, with exit 69 or 78",
      { timeout: 180_000 },
      async () => {
        const closed = await freePort();
        const [refused, refusedMigrate, unknownHost, wrongPassword, wrongUser, noTls, fine] =
          await Promise.all([
            start("serve", `postgres://tessera@127.0.0.1:${closed}/postgres`),
            start("migrate", `postgres://tessera@127.0.0.1:${closed}/postgres`),
            start("serve", "postgres://tessera@nonexistent.invalid:5432/postgres"),
            start("serve", `postgres://tessera:wrong-password@127.0.0.1:${port}/postgres`),
            start("migrate", `postgres://nobody:${PASSWORD}@127.0.0.1:${port}/postgres`),
            start("migrate", `${cluster.url}?sslmode=verify-full`),
            start("migrate", cluster.url),
          ]);

        expect(refused.stderr).toBe(
          `tessera: cannot use the store at 127.0.0.1:${closed}: connection refused\n`,
        );
        expect(refused.code).toBe(69);
        expect(refusedMigrate.stderr).toBe(refused.stderr);
        expect(refusedMigrate.code).toBe(69);

        expect(unknownHost.stderr).toBe(
          "tessera: cannot use the store at nonexistent.invalid:5432: the host name nonexistent.invalid does not resolve\n",
        );
        expect(unknownHost.code).toBe(78);

        expect(wrongPassword.stderr).toBe(
          `tessera: cannot use the store at 127.0.0.1:${port}: authentication failed: ` +
            'password authentication failed for user "tessera"\n',
        );
        expect(wrongPassword.code).toBe(78);
        expect(wrongUser.stderr).toMatch(
          new RegExp(
            `^tessera: cannot use the store at 127\\.0\\.0\\.1:${port}: authentication failed: .*"nobody"\\n$`,
          ),
        );
        expect(wrongUser.code).toBe(78);

        expect(noTls.stderr).toBe(
          `tessera: cannot use the store at 127.0.0.1:${port}: TLS failed: The server does not support SSL connections\n`,
        );
        expect(noTls.code).toBe(78);

        // Never the password, whatever the reason.
        for (const result of [wrongPassword, wrongUser, noTls]) {
          expect(result.stderr).not.toContain(PASSWORD);
          expect(result.stderr).not.toContain("wrong-password");
        }
        expect(fine.stderr).toBe("The store is migrated.\n");
        expect(fine.code).toBe(0);
      },
    );
  },
);
