# syntax=docker/dockerfile:1
# Tessera's server and `tessera` command (docs/operations.md). Debian, not Alpine: the `deno` npm package that
# runs reactors ships glibc builds only. The TypeScript sources run through tsx; only the SDK is compiled.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles from source when no prebuilt binary can be downloaded.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# The npm packages reactor code may require (docs/reactors.md#npm-packages); empty means the default list. The
# install caches them and the image runs with the same value, so that the two agree.
ARG TESSERA_REACTOR_MODULES=
# `npm ci` compiles the SDK and builds the web console (the root `prepare` script), installs better-sqlite3 and
# Deno, and caches the reactor packages with Deno from the npm registry (the server's `postinstall`). Behind a
# TLS-inspecting proxy, give its CA certificate as the build secret `npm_ca`. The development dependencies are
# removed afterwards. Deno keeps the file modes of the packages' tarballs, some of which are 0640: the server, not
# root, copies the cache for its workers, so everything in it is made readable.
RUN --mount=type=secret,id=npm_ca \
    --mount=type=cache,target=/root/.npm \
    if [ -f /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund \
 && test -f packages/sdk/dist/index.js \
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
# Owned by root: the server cannot change its own code.
COPY --from=build /app /app
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
