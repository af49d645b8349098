// A line-driven proxy in front of the official MCP TypeScript client: the
// Go tests write one JSON request per line on stdin and read one JSON
// reply per line on stdout. The client starts the server given after the
// script name (argv) over stdio, so every result bl mcp gives passes
// through the client's own validation (result schemas, output schemas).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import readline from "node:readline";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "bl-tsclient-test", version: "1.0.0" });

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function handle(req) {
  switch (req.op) {
    case "tools":
      return await client.listTools();
    case "prompts":
      return await client.listPrompts();
    case "prompt":
      return await client.getPrompt({ name: req.name });
    case "resources":
      return await client.listResources();
    case "resource":
      return await client.readResource({ uri: req.uri });
    case "instructions":
      return { instructions: client.getInstructions() };
    case "call": {
      const ac = new AbortController();
      if (req.cancelAfterMs) setTimeout(() => ac.abort("cancelled by the test"), req.cancelAfterMs);
      let progress = 0;
      const opts = { signal: ac.signal, timeout: req.timeoutMs || 60000 };
      if (req.progress) opts.onprogress = () => { progress++; };
      const result = await client.callTool({ name: req.tool, arguments: req.args || {} }, undefined, opts);
      return { result, progress };
    }
  }
  throw new Error("unknown op " + req.op);
}

try {
  await client.connect(transport);
} catch (e) {
  reply({ fatal: String(e && e.stack || e) });
  process.exit(1);
}
reply({ ready: true, server: client.getServerVersion() });

const rl = readline.createInterface({ input: process.stdin });
const pending = [];
rl.on("line", (line) => {
  const req = JSON.parse(line);
  pending.push(handle(req).then(
    (value) => reply({ seq: req.seq, value }),
    (err) => reply({ seq: req.seq, error: String(err && err.message || err), errorCode: err && err.code }),
  ));
});
rl.on("close", async () => {
  await Promise.allSettled(pending);
  await client.close();
  process.exit(0);
});
