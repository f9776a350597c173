// Records what pi 1.6 (pi-agent-core + pi-ai's faux provider, on Node 22) writes: every event
// of a few agent runs, and the messages they leave, as pi's own JSON. pi_trio's tests read
// them back (tests/test_pi16_json.py) and check that each one round-trips unchanged.
//
// Usage: node record_traces.mjs > traces.json
// The runs: a system prompt with a tool whose result has structuredContent and usage, a tool
// set changed between prompts (a system message with toolsAdded/toolsRemoved and sections), a
// deferred response, and an error response.
import { Agent } from "@earendil-works/pi-agent-core";
import {
  createFauxCore,
  fauxAssistantMessage,
  fauxText,
  fauxThinking,
  fauxToolCall,
  getCurrentSystemPrompt,
  getCurrentTools,
} from "@earendil-works/pi-ai";

const faux = createFauxCore({ provider: "faux", api: "faux" });
const model = faux.getModel();

const sum = {
  name: "sum",
  label: "Sum",
  description: "Adds two numbers",
  parameters: {
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  },
  outputSchema: { type: "object", properties: { total: { type: "number" } } },
  execute: async (_id, params) => ({
    content: [{ type: "text", text: String(params.a + params.b) }],
    details: { inputs: [params.a, params.b] },
    structuredContent: { total: params.a + params.b },
    usage: {
      input: 3, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 4,
      cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 },
    },
  }),
};
const echo = {
  name: "echo",
  label: "Echo",
  description: "Echoes its text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: async (_id, params) => ({ content: [{ type: "text", text: params.text }], details: {} }),
};

const events = [];
const agent = new Agent({
  initialState: { systemPrompt: "You are a calculator.", model, tools: [sum] },
  streamFn: faux.streamSimple,
});
agent.subscribe((event) => {
  events.push(JSON.parse(JSON.stringify(event)));
});

faux.setResponses([
  fauxAssistantMessage([fauxThinking("add them"), fauxToolCall("sum", { a: 2, b: 3 }, { id: "call_1" })], {
    stopReason: "toolUse",
    responseId: "resp_1",
  }),
  fauxAssistantMessage([fauxText("2 + 3 = 5")]),
]);
await agent.prompt("What is 2 + 3?");

// the tool set changes: echo in, sum out, and a section of the prompt patched
agent.state.tools = [echo];
agent.state.messages = [
  ...agent.state.messages,
  { role: "system", content: "", sections: { style: "Answer briefly." }, timestamp: 1 },
];
faux.setResponses([
  fauxAssistantMessage([fauxToolCall("echo", { text: "hi" }, { id: "call_2" })], { stopReason: "toolUse" }),
  fauxAssistantMessage([fauxText("hi")]),
]);
await agent.prompt("Say hi");

// a deferred response (the provider finishes it later) and an error
faux.setResponses([
  fauxAssistantMessage([fauxText("")], {
    stopReason: "deferred",
    deferred: { provider: "faux", modelId: model.id, api: "faux", id: "deferred_1", pollAfterMs: 1000 },
  }),
]);
await agent.prompt("Take your time");
faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "overloaded" })]);
await agent.prompt("Fail");

const messages = JSON.parse(JSON.stringify(agent.state.messages));
// what pi itself derives from the transcript's system messages: the prompt and the tools
const current = {
  systemPrompt: getCurrentSystemPrompt(messages),
  tools: getCurrentTools(messages).map((tool) => tool.name),
};
process.stdout.write(JSON.stringify({ pi: "1.6.0", events, messages, current }, null, 1));
