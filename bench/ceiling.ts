// The "ceiling": the fastest a Fastify 5 server can answer on this machine with a body of the same size as the
// Tessera scenario it is compared with. Run as its own process so it does not share an event loop with the load
// generator. Usage: node --import tsx bench/ceiling.ts <port> <bodyBytes>
import Fastify from "fastify";

/** `{"pad":""}`: the smallest body this server can pad to the requested size. */
const ENVELOPE_BYTES = 10;

const [portArg, bytesArg] = process.argv.slice(2);
const port = Number(portArg);
const bodyBytes = Number(bytesArg);
if (
  !Number.isInteger(port) ||
  port < 1 ||
  port > 65535 ||
  !Number.isInteger(bodyBytes) ||
  bodyBytes < ENVELOPE_BYTES
) {
  process.stderr.write(`usage: ceiling.ts <port> <bodyBytes ≥ ${ENVELOPE_BYTES}>\n`);
  process.exit(2);
}

// Serialized once: the ceiling measures the framework and the socket, so it does no per-request work that
// Tessera's answer might not also need. ASCII padding keeps characters and bytes equal.
const body = JSON.stringify({ pad: "x".repeat(bodyBytes - ENVELOPE_BYTES) });

const app = Fastify({ logger: false });
// The same content type Tessera's JSON answers carry, so the response headers are comparable. POST is for
// scenarios that send a JSON body (searches): the ceiling then parses one too.
app.get("/", (_request, reply) => reply.type("application/json; charset=utf-8").send(body));
app.post("/", (_request, reply) => reply.type("application/json; charset=utf-8").send(body));
await app.listen({ host: "127.0.0.1", port });
