import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { AppError } from "../server/errors.js";

export const CONSOLE_PREFIX = "/console";

/**
 * The console talks to this origin's API and nothing else; its build has no inline script or style (CodeMirror's
 * styles are constructed stylesheets, which CSP does not govern), so nothing here needs 'unsafe-inline'.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  // The console's URLs hold ids; they are nobody else's business.
  "referrer-policy": "no-referrer",
  // For browsers that predate frame-ancestors.
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** Built files are named by their content hash (Vite): one name, one content, forever. */
const ASSETS = "assets/";
const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * Where `npm run build --workspace @tessera/console` writes the console: that package's dist/; undefined when
 * the package is not installed.
 */
export function builtConsoleRoot(): string | undefined {
  try {
    const manifest = fileURLToPath(import.meta.resolve("@tessera/console/package.json"));
    return path.join(path.dirname(manifest), "dist");
  } catch {
    return undefined;
  }
}

/**
 * Serves the single-page console under /console: its files, and index.html for every other path below it, so
 * that a reload or a shared link of /console/tokens/… opens the page the router shows. Public like /docs: the
 * files hold no secret, and the console signs in with a management key it sends to the API like any client.
 */
export async function registerConsole(app: FastifyInstance, root: string | undefined): Promise<void> {
  const built = root !== undefined && existsSync(path.join(root, "index.html"));
  await app.register(async (scope) => {
    scope.addHook("onRequest", async (_request, reply) => {
      void reply.headers(SECURITY_HEADERS);
    });
    if (root === undefined || !built) {
      const unbuilt = () => {
        throw new AppError(
          "unavailable",
          "The console is not built: run `npm run build --workspace @tessera/console`, or set " +
            "TESSERA_CONSOLE_ENABLED=false.",
        );
      };
      scope.get(CONSOLE_PREFIX, { schema: { hide: true } }, unbuilt);
      scope.get(`${CONSOLE_PREFIX}/*`, { schema: { hide: true } }, unbuilt);
      return;
    }
    await scope.register(fastifyStatic, { root, serve: false, index: false });
    const index = (reply: FastifyReply) =>
      reply.header("cache-control", "no-cache").sendFile("index.html", { cacheControl: false });
    scope.get(CONSOLE_PREFIX, { schema: { hide: true } }, (_request, reply) => index(reply));
    scope.get<{ Params: { "*": string } }>(
      `${CONSOLE_PREFIX}/*`,
      { schema: { hide: true } },
      (request, reply) => {
        const file = request.params["*"];
        // A path with a file extension names a file (and is a 404 when there is none); any other is a page.
        if (!/\.[a-z0-9]+$/i.test(file)) return index(reply);
        if (file.startsWith(ASSETS)) {
          return reply.header("cache-control", IMMUTABLE).sendFile(file, { cacheControl: false });
        }
        return reply.sendFile(file, { maxAge: 3_600_000 });
      },
    );
  });
}
