// Opens a session file with pi 1.6's own SessionManager and prints, as one JSON line, what pi
// derives from it: the context's messages, thinking level and model (buildSessionContext),
// the header and the leaf. Usage: node session_context.mjs FILE.jsonl
import { SessionManager } from "@earendil-works/pi-coding-agent";

const sm = SessionManager.open(process.argv[2]);
const { messages, thinkingLevel, model } = sm.buildSessionContext();
console.log(JSON.stringify({
  messages, thinkingLevel, model, header: sm.getHeader(), leaf: sm.getLeafId(),
  entries: sm.getEntries().length,
}));
