// The `cliPath` pi's RpcClient runs as `node <cliPath> --mode rpc ...`: it runs `pi-trio rpc`
// instead, so pi's own client drives pi_trio. The command (a JSON array, e.g. the test's
// interpreter with `-m pi_trio rpc`) comes in $PI_TRIO_RPC_COMMAND, its working directory in
// $PI_TRIO_RPC_CWD; the client's arguments follow it. stdin/stdout/stderr are the child's own,
// a SIGTERM/SIGINT (RpcClient.stop) is passed on, and the shim exits with the child's status.
import { spawn } from "node:child_process";

const command = JSON.parse(process.env.PI_TRIO_RPC_COMMAND ?? "null");
if (!Array.isArray(command) || command.length === 0) {
	process.stderr.write("pi_trio_rpc_shim: set PI_TRIO_RPC_COMMAND to a JSON array\n");
	process.exit(2);
}
const child = spawn(command[0], [...command.slice(1), ...process.argv.slice(2)], {
	cwd: process.env.PI_TRIO_RPC_CWD || undefined,
	stdio: "inherit",
});
for (const signal of ["SIGTERM", "SIGINT"]) {
	process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
