# syntax=docker/dockerfile:1
# Tessera's server and `tessera` command (docs/operations.md): the compiled JavaScript (dist/) on Node.js 24 LTS.
# Debian, not Alpine: the `deno` npm package that runs reactors ships glibc builds only. test/docker.test.ts
# checks this file, .dockerignore and docker-compose.yml against the repository.
#
# The base image is pinned by digest, that of the multi-platform image index: node:24-bookworm-slim as published
# on 2026-08-25 (Node.js 24.19.0), as recorded by docker-library/repo-info. It was not pulled or checked against
# the registry where it was written (no Docker engine there); a wrong digest fails the build, it cannot pull
# another image. To move to the current node:24-bookworm-slim, take the "Digest:" line of
#   docker buildx imagetools inspect node:24-bookworm-slim
# and replace the digest below (docs/operations.md#base-image).
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df

FROM ${NODE_IMAGE} AS build
# better-sqlite3 13 ships its binaries in its npm package and needs no install step, but npm runs an implicit
# `node-gyp rebuild` for it when installing from a lock file (the lock does not record the package's
# `gypfile: false`): a no-op build where the package has a binary for the platform, which still needs Python and
# make (and a compiler where it has none). The repository's package.json denies that script (`allowScripts`), which
# npm 11.19 and later honour; for an older npm in the image, the tools are here, and node-gyp takes the image's own
# Node.js headers instead of downloading them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY . .
# The npm packages reactor code may require (docs/reactors.md#npm-packages); empty means the default list. The
# install caches them and the image runs with the same value, so that the two agree.
ARG TESSERA_REACTOR_MODULES=
# `npm ci` installs everything from the npm registry (better-sqlite3 and Deno ship their binaries in their npm
# packages; pkcs11js, the pkcs11 master key provider's binding, compiles here with the tools above, and the check
# below fails the build if it did not), compiles the SDK, the server and the CLI with tsc and builds the Elements
# files and the web console (the root `prepare` script), and caches the reactor packages with Deno from the npm
# registry. Behind a TLS-inspecting proxy, give its
# CA certificate as the build secret `npm_ca`. The development dependencies (TypeScript, tsx, Vitest) are removed
# afterwards. Deno keeps the file modes of the packages' tarballs, some of which are 0640: the server, not root,
# copies the cache for its workers, so everything in it is made readable.
RUN --mount=type=secret,id=npm_ca \
    --mount=type=cache,target=/root/.npm \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund \
 && test -f packages/cli/dist/main.js \
 && test -f packages/server/dist/main.js \
 && test -f packages/server/dist/reactors/sandbox/harness.js \
 && test -f packages/sdk/dist/index.js \
 && test -f node_modules/pkcs11js/build/Release/pkcs11.node \
 && test ! -e node_modules/typescript \
 && test ! -e node_modules/tsx \
 && test -f packages/elements/dist/manifest.json \
 && test -f packages/console/dist/index.html \
 && test -f packages/server/node_modules/.cache/tessera-reactor-modules/manifest.json \
 && chmod -R a+rX packages/server/node_modules/.cache/tessera-reactor-modules

FROM ${NODE_IMAGE}
# Reactor workers are started through setpriv and prlimit (util-linux, essential in Debian), found in /usr/bin
# since the workers' environment has no PATH. The server runs as `tessera`; workers then run as the same user.
RUN test -x /usr/bin/setpriv && test -x /usr/bin/prlimit \
 && groupadd --gid 10001 tessera \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin tessera \
 && install -d -m 0755 /var/lib/tessera \
 && install -d -o tessera -g tessera -m 0700 /var/lib/tessera/data \
 && install -d -o tessera -g tessera -m 0755 /var/lib/tessera/reactors
WORKDIR /app
# Only what runs: the manifests, the production dependencies (node_modules/@tessera/* link to the packages) and
# the compiled files; no TypeScript sources, no compiler. Owned by root: the server cannot change its own code.
COPY --from=build /app/package.json /app/package.json
COPY --from=build /app/node_modules /app/node_modules
COPY --from=build /app/packages/cli/package.json /app/packages/cli/package.json
COPY --from=build /app/packages/cli/bin /app/packages/cli/bin
COPY --from=build /app/packages/cli/dist /app/packages/cli/dist
COPY --from=build /app/packages/sdk/package.json /app/packages/sdk/package.json
COPY --from=build /app/packages/sdk/dist /app/packages/sdk/dist
COPY --from=build /app/packages/server/package.json /app/packages/server/package.json
COPY --from=build /app/packages/server/dist /app/packages/server/dist
# The reactor packages cached at install (and any dependency npm nested under the server).
COPY --from=build /app/packages/server/node_modules /app/packages/server/node_modules
ARG TESSERA_REACTOR_MODULES=
ENV NODE_ENV=production \
    TESSERA_HOST=0.0.0.0 \
    TESSERA_PORT=3000 \
    TESSERA_DATA_DIR=/var/lib/tessera/data \
    TESSERA_REACTOR_DIR=/var/lib/tessera/reactors \
    TESSERA_REACTOR_MODULES=${TESSERA_REACTOR_MODULES}
USER 10001:10001
EXPOSE 3000
# Readiness (the store answers and is migrated), which load shedding never fails (docs/limits.md). The image has
# no curl: Node's fetch asks.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TESSERA_PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `docker run <image> migrate`, `keys rotate`, `audit verify`, ... run the other vault commands.
ENTRYPOINT ["node", "packages/cli/bin/tessera.js"]
CMD ["serve"]
