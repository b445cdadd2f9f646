import { createHash } from "node:crypto";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { Asset, ElementAssets } from "./assets.js";
import { headersFor, type HeaderSettings } from "./headers.js";

export interface ElementsRoutesOptions extends HeaderSettings {
  readonly assets: ElementAssets;
}

/**
 * `/elements/v1/…` (the library, the field document and its files) and, where enabled, `/elements/demo`: static
 * files from memory with their security headers, ETags and gzip. No key is needed; nothing here is secret.
 */
export function elementsRoutes(options: ElementsRoutesOptions): FastifyPluginAsync {
  return async (app) => {
    for (const asset of options.assets.files) {
      if (!options.demo && (asset.role === "demo-page" || asset.role === "demo-asset")) continue;
      const headers = headersFor(asset.role, options);
      // The policy is part of the tag: a changed list of origins is fetched anew, not revalidated as unchanged.
      const etag = `W/"${asset.digest}.${createHash("sha256").update(JSON.stringify(headers)).digest("base64url").slice(0, 10)}"`;
      app.get(asset.url, { schema: { hide: true } }, (request, reply) =>
        send(asset, headers, etag, request, reply),
      );
    }
  };
}

function send(
  asset: Asset,
  headers: Record<string, string>,
  etag: string,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  void reply.headers({ ...headers, etag, vary: "Accept-Encoding" });
  if (matches(request.headers["if-none-match"], etag)) return reply.code(304).send();
  void reply.type(asset.contentType);
  if (acceptsGzip(request.headers["accept-encoding"])) {
    return reply.header("content-encoding", "gzip").send(asset.gzipped);
  }
  return reply.send(asset.body);
}

function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const weak = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || weak(tag) === weak(etag));
}

/** `gzip` listed with a non-zero quality (RFC 9110 §12.5.3); `*` alone is not taken as a promise of gzip. */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(",").some((entry) => {
    const [coding, ...parameters] = entry.split(";").map((part) => part.trim().toLowerCase());
    if (coding !== "gzip" && coding !== "x-gzip") return false;
    const quality = parameters.find((parameter) => parameter.startsWith("q="));
    return quality === undefined || Number(quality.slice(2)) > 0;
  });
}
