// Drives pi's own streamProxy client (pi-agent-core 0.73.1) against a proxy server.
// Usage: node pi_stream_proxy.mjs <mode> <proxyUrl> <token>; the request JSON
// ({model, context, options}) comes on stdin. Prints one JSON line per event and a last
// line {"final": message}. Modes: "stream" reads everything; "abort" aborts after the
// first text_delta.
import { streamProxy } from "@mariozechner/pi-agent-core";

const [mode, proxyUrl, authToken] = process.argv.slice(2);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { model, context, options } = JSON.parse(input);

const controller = new AbortController();
const stream = streamProxy(model, context, {
  ...options,
  proxyUrl,
  authToken,
  signal: controller.signal,
});
for await (const event of stream) {
  const line = { type: event.type };
  if ("contentIndex" in event) line.contentIndex = event.contentIndex;
  if ("delta" in event) line.delta = event.delta;
  console.log(JSON.stringify(line));
  if (mode === "abort" && event.type === "text_delta") controller.abort();
}
console.log(JSON.stringify({ final: await stream.result() }));
