// The reference implementation of pi_trio's benchmarks: pi-agent-core 0.73.1 on Node.
//
//   node bench.mjs '{"scenario": "S1", "turns": 1000}'
//
// Runs one scenario once with pi's public Agent API, a scripted stream function built on
// pi-ai's createAssistantMessageEventStream, and one subscriber counting events; prints one
// JSON line: {"figures": {...}, "info": {...}, "transcripts": [...]}. Transcripts (normalised:
// role, stopReason, tool call ids) are checked by the Python runner, with the same check as
// the Python implementations.
import { Agent } from "@mariozechner/pi-agent-core";
import { createAssistantMessageEventStream, Type } from "@mariozechner/pi-ai";

const TEXT_PIECES = 8;
const FINAL_TEXT = "All done: the work is complete.";
const ZERO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const MODEL = {
  id: "faux-1",
  name: "Faux",
  api: "faux",
  provider: "faux",
  baseUrl: "http://localhost:0",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 16384,
};

// --- the scripted model -----------------------------------------------------------------------

function inPieces(text, count) {
  const n = Math.max(1, Math.min(count, text.length));
  const step = Math.floor(text.length / n);
  const extra = text.length % n;
  const pieces = [];
  let start = 0;
  for (let i = 0; i < n; i++) {
    const end = start + step + (i < extra ? 1 : 0);
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

let nextId = 0;
function toolTurn(name, argsList, turn = 0) {
  return {
    text: `Turn ${turn}: calling ${name} now.`,
    calls: argsList.map((args) => ({ id: `call_${nextId++}`, name, args })),
  };
}
const finalAnswer = (text = FINAL_TEXT) => ({ text, calls: [] });

// A stream function answering each call with the next scripted answer, with zero delay the way
// pi-ai's own faux provider does it: production starts in a microtask and each delta chunk
// waits one microtask, so the consumer keeps pace (no event queue builds up).
const nextMicrotask = () => new Promise((resolve) => queueMicrotask(resolve));

function scripted(answers, chunk = (text) => inPieces(text, TEXT_PIECES)) {
  let index = 0;
  return (model, context, options) => {
    const stream = createAssistantMessageEventStream();
    const answer = answers[index++];
    const message = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: ZERO_USAGE,
      stopReason: "stop",
      timestamp: Date.now(),
    };
    if (options?.signal?.aborted || answer === undefined) {
      message.stopReason = answer === undefined ? "error" : "aborted";
      message.errorMessage = answer === undefined ? "No more answers" : "Request was aborted";
      stream.push({ type: "error", reason: message.stopReason, error: message });
      stream.end(message);
      return stream;
    }
    queueMicrotask(async () => {
      stream.push({ type: "start", partial: message });
      const text = { type: "text", text: "" };
      message.content.push(text);
      stream.push({ type: "text_start", contentIndex: 0, partial: message });
      for (const piece of chunk(answer.text)) {
        await nextMicrotask();
        text.text += piece;
        stream.push({ type: "text_delta", contentIndex: 0, delta: piece, partial: message });
      }
      stream.push({ type: "text_end", contentIndex: 0, content: text.text, partial: message });
      for (const call of answer.calls) {
        const block = { type: "toolCall", id: call.id, name: call.name, arguments: {} };
        message.content.push(block);
        const contentIndex = message.content.length - 1;
        stream.push({ type: "toolcall_start", contentIndex, partial: message });
        const json = JSON.stringify(call.args);
        await nextMicrotask();
        block.arguments = JSON.parse(json);
        stream.push({ type: "toolcall_delta", contentIndex, delta: json, partial: message });
        stream.push({ type: "toolcall_end", contentIndex, toolCall: block, partial: message });
      }
      message.stopReason = answer.calls.length ? "toolUse" : "stop";
      stream.push({ type: "done", reason: message.stopReason, message });
      stream.end(message);
    });
    return stream;
  };
}

// --- the tools --------------------------------------------------------------------------------

const OK = { content: [{ type: "text", text: "ok" }], details: {} };
let runningTools = 0; // tool executions not settled yet (leak check)

const NOOP = {
  name: "noop",
  label: "noop",
  description: "Does nothing and returns at once.",
  parameters: Type.Object({}, { additionalProperties: false }),
  execute: async () => OK,
};

const SLEEP = {
  name: "sleep",
  label: "sleep",
  description: "Waits `ms` milliseconds; `cooperative` says whether it stops on abort.",
  parameters: Type.Object(
    { ms: Type.Number({ minimum: 0 }), cooperative: Type.Boolean() },
    { additionalProperties: false },
  ),
  execute: (toolCallId, { ms, cooperative }, signal) =>
    new Promise((resolve, reject) => {
      runningTools++;
      let onAbort;
      const timer = setTimeout(() => {
        runningTools--;
        if (onAbort) signal.removeEventListener("abort", onAbort);
        resolve(OK);
      }, ms);
      if (cooperative && signal) {
        onAbort = () => {
          clearTimeout(timer);
          runningTools--;
          reject(new Error("Tool execution was aborted"));
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    }),
};

// --- helpers ----------------------------------------------------------------------------------

function makeAgent(answers, tools, chunk) {
  return new Agent({
    initialState: { model: MODEL, tools, systemPrompt: "" },
    streamFn: scripted(answers, chunk),
  });
}

function normalise(messages) {
  return messages.map((m) => {
    if (m.role === "assistant") {
      return {
        role: "assistant",
        stopReason: m.stopReason,
        toolCalls: m.content.filter((c) => c.type === "toolCall").map((c) => c.id),
      };
    }
    if (m.role === "toolResult") return { role: "toolResult", toolCallId: m.toolCallId };
    return { role: m.role };
  });
}

const now = () => performance.now(); // ms
const noopAnswers = (turns) => [
  ...Array.from({ length: turns }, (_, t) => toolTurn("noop", [{}], t)),
  finalAnswer(),
];

function mulberry32(seed) {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function s7Schedule(runs, seed = 12345) {
  const rand = mulberry32(seed);
  const schedule = [];
  for (let r = 0; r < runs; r++) {
    const sleeps = [];
    for (let t = 0; t < 5; t++) sleeps.push([2 * rand(), 2 * rand(), 2 * rand()]);
    const longest = sleeps.reduce((sum, turn) => sum + Math.max(...turn), 0);
    schedule.push([sleeps, rand() * longest]);
  }
  return schedule;
}

function percentile(values, q) {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((q / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

// --- the scenarios ----------------------------------------------------------------------------

async function s1({ turns }) {
  let events = 0;
  const agent = makeAgent(noopAnswers(turns), [NOOP]);
  agent.subscribe(() => {
    events++;
  });
  const start = now();
  await agent.prompt("Go.");
  await agent.waitForIdle();
  const elapsed = (now() - start) / 1e3;
  return {
    figures: { us_per_turn: (elapsed / (turns + 1)) * 1e6, events_per_s: events / elapsed },
    info: { events, messages: agent.state.messages.length },
  };
}

async function s2({ calls, ms }) {
  let events = 0;
  const args = Array.from({ length: calls }, () => ({ ms, cooperative: true }));
  const agent = makeAgent([toolTurn("sleep", args), finalAnswer()], [SLEEP]);
  agent.subscribe(() => {
    events++;
  });
  const start = now();
  await agent.prompt("Go.");
  await agent.waitForIdle();
  return {
    figures: { wall_ms: now() - start },
    info: { events, messages: agent.state.messages.length },
  };
}

async function s34({ calls, ms, cooperative, abort_after_ms }) {
  let events = 0;
  const args = Array.from({ length: calls }, () => ({ ms, cooperative }));
  const agent = makeAgent([toolTurn("sleep", args), finalAnswer()], [SLEEP]);
  let armed = false;
  let abortedAt = null;
  const figures = {};
  agent.subscribe((event) => {
    events++;
    if (event.type === "tool_execution_start" && !armed) {
      armed = true;
      setTimeout(() => {
        abortedAt = now();
        agent.abort();
      }, abort_after_ms);
    }
  });
  await agent.prompt("Go.");
  await agent.waitForIdle();
  if (abortedAt !== null) figures.abort_to_idle_ms = now() - abortedAt;
  return {
    figures,
    info: { events, leaked_tool_executions: runningTools },
    checks: { leaks: runningTools },
    transcripts: [{ allowed: ["aborted"], messages: normalise(agent.state.messages) }],
  };
}

async function s5({ agents, turns }) {
  let events = 0;
  const listener = () => {
    events++;
  };
  const crowd = [];
  for (let i = 0; i < agents; i++) {
    const agent = makeAgent(noopAnswers(turns), [NOOP]);
    agent.subscribe(listener);
    crowd.push(agent);
  }
  const start = now();
  await Promise.all(crowd.map((agent) => agent.prompt("Go.")));
  await Promise.all(crowd.map((agent) => agent.waitForIdle()));
  return { figures: { wall_s: (now() - start) / 1e3 }, info: { events } };
}

async function s6({ deltas }) {
  let events = 0;
  const agent = makeAgent([finalAnswer("x".repeat(deltas))], [], (text) => text.split(""));
  agent.subscribe(() => {
    events++;
  });
  const start = now();
  await agent.prompt("Go.");
  await agent.waitForIdle();
  const elapsed = (now() - start) / 1e3;
  return { figures: { events_per_s: events / elapsed }, info: { events } };
}

async function s7({ runs }) {
  const abortToIdle = [];
  const abortToIdleCpu = [];
  const transcripts = [];
  let leaks = 0;
  let midRuns = 0;
  let events = 0;
  const start = now();
  for (const [sleeps, abortAt] of s7Schedule(runs)) {
    const answers = sleeps.map((turn, t) =>
      toolTurn(
        "sleep",
        turn.map((ms) => ({ ms, cooperative: true })),
        t,
      ),
    );
    const agent = makeAgent([...answers, finalAnswer()], [SLEEP]);
    agent.subscribe(() => {
      events++;
    });
    // The timer notes the time and aborts; idle is when the prompt's caller is back from
    // waitForIdle() (as in the Python implementations).
    let landed = null;
    const timer = setTimeout(() => {
      landed = { midRun: agent.state.isStreaming, at: now(), cpu: process.cpuUsage() };
      agent.abort();
    }, abortAt);
    await agent.prompt("Go.");
    await agent.waitForIdle();
    const idle = now();
    leaks += runningTools;
    if (landed === null) clearTimeout(timer);
    const midRun = landed?.midRun ?? false;
    if (midRun) {
      midRuns++;
      abortToIdle.push((idle - landed.at) * 1e3);
      const used = process.cpuUsage(landed.cpu); // µs, the whole process (V8's helpers too)
      abortToIdleCpu.push(used.user + used.system);
    }
    transcripts.push({
      allowed: midRun ? ["aborted", "stop"] : ["stop"],
      messages: normalise(agent.state.messages),
    });
  }
  const elapsed = (now() - start) / 1e3;
  return {
    figures: {
      runs_per_s: runs / elapsed,
      abort_idle_median_us: percentile(abortToIdle, 50),
      abort_idle_p99_us: percentile(abortToIdle, 99),
      abort_idle_p99_cpu_us: percentile(abortToIdleCpu, 99),
      mid_run_aborts: midRuns,
    },
    checks: { leaks },
    info: { runs, finished_first: runs - midRuns, events },
    transcripts,
  };
}

const SCENARIOS = { S1: s1, S2: s2, S3: s34, S4: s34, S5: s5, S6: s6, S7: s7 };

const params = JSON.parse(process.argv[2]);
const result = await SCENARIOS[params.scenario](params);
result.figures.peak_rss_mib = process.resourceUsage().maxRSS / 1024;
result.info = { ...result.info, node: process.version };
process.stdout.write(`${JSON.stringify(result)}\n`);
