// Drives `pi-trio rpc` with pi 1.6's own RpcClient (through pi_trio_rpc_shim.mjs) and prints,
// as one JSON object, every line the client saw as an event and what each command returned:
// a prompt with tool calls, steer / follow_up / a prompt queued while streaming, get_state,
// get_messages, an abort in the middle of a slow tool, the session commands (stats, entries,
// a second session and back), and an unsupported command.
// Usage: node rpc_client_drive.mjs '{"command": [...], "cwd": "...", "args": [...]}'
import path from "node:path";
import { fileURLToPath } from "node:url";
import { RpcClient } from "./node_modules/@earendil-works/pi-coding-agent/dist/modes/rpc/rpc-client.js";

const config = JSON.parse(process.argv[2]);
const here = path.dirname(fileURLToPath(import.meta.url));
const client = new RpcClient({
	cliPath: path.join(here, "pi_trio_rpc_shim.mjs"),
	args: config.args ?? [],
	env: {
		// RpcClient spawns "node": make it this Node 22
		PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
		PI_TRIO_RPC_COMMAND: JSON.stringify(config.command),
		PI_TRIO_RPC_CWD: config.cwd ?? "",
	},
});

const events = [];
client.onEvent((event) => events.push(event));
const marks = {}; // the index in `events` where each step began
const results = {};

function waitFor(type) {
	return new Promise((resolve) => {
		const stop = client.onEvent((event) => {
			if (event.type === type) {
				stop();
				resolve(event);
			}
		});
	});
}

async function step(name, body) {
	marks[name] = events.length;
	results[name] = await body();
}

await client.start();
try {
	await step("tools", async () => {
		const settled = client.collectEvents(20000);
		const disposition = await client.prompt("what is 6 * 7?");
		await settled;
		return { disposition };
	});
	await step("queues", async () => {
		const settled = client.collectEvents(20000);
		const started = waitFor("tool_execution_start");
		const disposition = await client.prompt("wait 0.3");
		await started;
		const steer = await client.steer("steered");
		const followUp = await client.followUp("followed");
		const queuedPrompt = await client.prompt("queued by prompt", undefined, "followUp");
		let refused = null;
		try {
			await client.prompt("no behaviour given");
		} catch (error) {
			refused = error.message;
		}
		const during = await client.getState();
		await settled;
		return { disposition, steer, followUp, queuedPrompt, refused, during };
	});
	await step("state", async () => ({
		state: await client.getState(),
		messages: await client.getMessages(),
		stats: await client.getSessionStats(),
		entries: await client.getEntries(),
		lastText: await client.getLastAssistantText(),
		levels: await client.getAvailableThinkingLevels(),
	}));
	await step("abort", async () => {
		const settled = client.collectEvents(20000);
		const started = waitFor("tool_execution_start");
		await client.prompt("wait 30");
		await started;
		await client.abort();
		const after = await client.getState();
		await settled;
		return { after };
	});
	await step("sessions", async () => {
		const first = await client.getState();
		const created = await client.newSession();
		const second = await client.getState();
		const settled = client.collectEvents(20000);
		await client.prompt("what is 1 + 2?");
		await settled;
		const secondMessages = await client.getMessages();
		const switched = await client.switchSession(first.sessionId);
		const back = await client.getState();
		const entries = await client.getEntries();
		const since = await client.getEntries(entries.entries[1].id);
		return { first, created, second, secondMessages, switched, back, since };
	});
	await step("unsupported", async () => {
		try {
			await client.bash("ls");
			return { error: null };
		} catch (error) {
			return { error: error.message };
		}
	});
} finally {
	await client.stop();
}
process.stdout.write(`${JSON.stringify({ events, marks, results })}\n`);
