// Records a pi 1.6 session file with pi's own SessionManager, for pi_trio's import tests.
// Usage: node record_session_file.mjs OUT.jsonl (prints what pi derives from it, as
// session_context.mjs does)
// The session has messages with a tool call, labels and custom (extension) entries, a model
// and thinking-level change, a compaction, a custom_message, a context edit, a shell command
// (bashExecution), an assistant message with pi 1.6's durationMs, and a branch left with a summary: the file's last entry (the leaf pi takes
// when it opens the file) is on the new branch, so the branch is not the file's order.
import { SessionManager } from "@earendil-works/pi-coding-agent";

const out = process.argv[2];
// --system: also pi 1.6's system messages (a leading one with sections and tools, a later one
// removing a tool), as pi-coding-agent 1.6 records them; a compaction then saves the current one
const withSystem = process.argv.includes("--system");
if (!out) {
  console.error("usage: node record_session_file.mjs OUT.jsonl [--system]");
  process.exit(2);
}
let clock = Date.parse("2026-11-30T09:00:00.000Z");
const at = () => (clock += 1000);
const usage = (input, output) => ({
  input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output,
  cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 },
});
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: at() });
const assistant = (content, stopReason = "stop", extra = {}) => ({
  role: "assistant", content, api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-5", usage: usage(120, 30), stopReason, timestamp: at(), ...extra,
});

const sm = SessionManager.open(out); // a new file at that path (pi writes it once a message exists)
sm.appendThinkingLevelChange("medium");
sm.appendModelChange("anthropic", "claude-sonnet-4-5");
const bash = {
  name: "bash", description: "Run a shell command.",
  parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
};
if (withSystem) {
  sm.appendMessage({
    role: "system", content: "You are a coding agent.",
    sections: { rules: "<rules>Be brief.</rules>" }, toolsAdded: [bash], timestamp: at(),
  });
}
const first = sm.appendMessage(user("What files are here?"));
sm.appendMessage(assistant(
  [{ type: "text", text: "Let me look." },
   { type: "toolCall", id: "toolu_01", name: "bash", arguments: { command: "ls" } }],
  "toolUse",
));
sm.appendMessage({
  role: "toolResult", toolCallId: "toolu_01", toolName: "bash",
  content: [{ type: "text", text: "foo.py\nbar.py" }], details: { exitCode: 0 },
  isError: false, timestamp: at(),
});
sm.appendMessage(assistant([{ type: "text", text: "Two files: foo.py and bar.py." }]));
sm.appendLabelChange(first, "start");
sm.appendCustomEntry("my-extension", { counter: 1 });
if (withSystem) {
  sm.appendMessage({
    role: "system", content: "", sections: { rules: "<rules>Be thorough.</rules>" },
    toolsRemoved: [{ name: "bash" }], timestamp: at(),
  });
}
const explain = sm.appendMessage(user("Explain foo.py"));
sm.appendMessage(assistant([
  { type: "thinking", thinking: "Read it first.", thinkingSignature: "sig-1" },
  { type: "text", text: "foo.py defines one function." },
]));
sm.appendCompaction("The user listed the files (foo.py, bar.py) and asked about foo.py.", explain, 12345,
  { readFiles: ["foo.py"] });
const reminder = sm.appendCustomMessageEntry("reminder", "Run the tests before you finish.", true, { level: 1 });
sm.appendContextEdit(explain, { content: "Explain foo.py in Rust terms." }); // on the branch left below
sm.appendMessage(user("Now rewrite foo.py in Rust."));
sm.appendMessage(assistant([{ type: "text", text: "Rewritten." }]));
// back to the reminder, leaving the Rust rewrite behind with a summary of it
sm.branchWithSummary(reminder, "Tried rewriting foo.py in Rust; the user dropped it.");
sm.appendContextEdit(explain, { content: "Explain foo.py briefly." }); // on the current branch
sm.appendMessage({
  role: "bashExecution", command: "pytest -q", output: "2 passed", exitCode: 0,
  cancelled: false, truncated: false, timestamp: at(),
});
sm.appendMessage(user("Write tests for foo.py instead."));
// pi 1.6 adds durationMs to an assistant message (a field pi_trio may not model yet)
sm.appendMessage(assistant([{ type: "text", text: "Added test_foo.py." }], "stop", { durationMs: 1234 }));
sm.appendModelChange("openai", "gpt-4o-mini");
sm.appendSessionInfo("foo.py work");
sm.appendMessage(user("Thanks!"));
// what pi derives from the file it wrote, reopened as pi opens it (as session_context.mjs prints)
const opened = SessionManager.open(out);
const { messages, thinkingLevel, model } = opened.buildSessionContext();
console.log(JSON.stringify({
  messages, thinkingLevel, model, header: opened.getHeader(), leaf: opened.getLeafId(),
  entries: opened.getEntries().length,
}));
