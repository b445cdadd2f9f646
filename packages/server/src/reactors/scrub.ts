/**
 * Takes host paths out of text that reaches a caller (reactor error messages and their `errors`): the Deno cache,
 * the harness, the installation and Deno's internal module names say how the server is laid out.
 */
export function pathScrubber(hostPaths: readonly string[]): (text: string) => string {
  const known = [...new Set(hostPaths.filter((p) => p.length > 1))].sort((a, b) => b.length - a.length);
  return (text) => {
    let scrubbed = text;
    for (const hostPath of known) scrubbed = scrubbed.split(hostPath).join("<internal>");
    return scrubbed
      .replace(/\b(?:file|ext|node):\/*[^\s'")]+/g, "<internal>")
      .replace(/(?<![\w:/.])\/(?:tmp|root|home|usr|opt|var|work|srv|app|proc|etc)\/[^\s'")]*/g, "<internal>");
  };
}
