#!/usr/bin/env node
// Runs the compiled CLI (dist/, built by `npm install`). Development and the tests run the TypeScript sources
// instead: `node --conditions=tessera-source --import tsx` makes "#main" resolve to src/main.ts (package.json).
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  // Native modules built for Node.js 22+ would crash later, far from the cause.
  process.stderr.write(
    `tessera: Node.js 22 or newer is needed (24 LTS recommended); this is ${process.version}\n`,
  );
  process.exit(1);
}
try {
  await import("#main");
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("/dist/main.js")) throw error;
  process.stderr.write("tessera: the compiled files are missing (packages/cli/dist): run `npm run build`\n");
  process.exit(1);
}
