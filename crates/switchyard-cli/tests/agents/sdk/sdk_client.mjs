// A two-turn tool conversation through `switchyard serve` with an official Node SDK: the twin
// of sdk_client.py (same arguments, same JSON summary; see there).
//
//   node sdk_client.mjs --api chat|responses|messages --stream|--no-stream \
//       --base-url URL --model ID --workdir DIR [--prompt TEXT] [--no-tools] [--max-tokens N] \
//       [--extra JSON]
//   node sdk_client.mjs --api models --base-url ORIGIN
//
// The SDKs are resolved from SWITCHYARD_SDK_NODE_MODULES (the node_modules folder
// scripts/agent-clients.sh installs them into). Streamed turns go through the SDK's own
// accumulating helpers (chat.completions.stream().finalChatCompletion(),
// responses.stream().finalResponse(), messages.stream().finalMessage()). The key comes from
// OPENAI_API_KEY or ANTHROPIC_API_KEY; it is never printed.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const PROMPT = "Create the file hello.txt containing hi. Use the write_file tool.";
const TOOL_DESCRIPTION = "Write a text file in the working directory.";
const TOOL_SCHEMA = {
  type: "object",
  properties: {
    path: { type: "string", description: "File path, relative" },
    content: { type: "string", description: "The whole file" },
  },
  required: ["path", "content"],
};

function parseArgs(argv) {
  const a = { prompt: PROMPT, tools: true, maxTokens: 256, extra: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--stream") a.stream = true;
    else if (arg === "--no-stream") a.stream = false;
    else if (arg === "--no-tools") a.tools = false;
    else if (arg === "--max-tokens") a.maxTokens = Number(argv[++i]);
    else if (arg === "--extra") a.extra = JSON.parse(argv[++i]);
    else if (["--api", "--base-url", "--model", "--workdir", "--prompt"].includes(arg)) {
      a[arg.slice(2).replace("-u", "U")] = argv[++i];
    } else throw new Error(`unknown argument ${arg}`);
  }
  const required = a.api === "models" ? ["baseUrl"] : ["api", "stream", "baseUrl", "model", "workdir"];
  for (const k of required) {
    if (a[k] === undefined) throw new Error(`--${k} is required`);
  }
  return a;
}

// Performs a write_file call inside workdir; returns the tool result text.
function writeFile(workdir, args, wrote) {
  const root = path.resolve(workdir);
  const target = path.resolve(root, args.path);
  if (!target.startsWith(root + path.sep)) return "refused: outside the working directory";
  fs.writeFileSync(target, args.content);
  wrote[args.path] = args.content;
  return `wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}`;
}

async function chatTurn(client, a, messages) {
  const body = { model: a.model, messages, max_tokens: a.maxTokens, ...a.extra };
  if (a.tools) {
    body.tools = [{ type: "function", function: {
      name: "write_file", description: TOOL_DESCRIPTION, parameters: TOOL_SCHEMA } }];
  }
  let deltas = 0;
  const events = new Set();
  let completion;
  if (a.stream) {
    const stream = client.chat.completions.stream({
      ...body, stream_options: { include_usage: true } });
    for (const name of ["content.delta", "content.done", "tool_calls.function.arguments.delta",
      "tool_calls.function.arguments.done"]) {
      stream.on(name, () => events.add(name));
    }
    stream.on("content.delta", () => deltas++);
    stream.on("tool_calls.function.arguments.delta", () => deltas++);
    completion = await stream.finalChatCompletion();
  } else {
    completion = await client.chat.completions.create(body);
  }
  const choice = completion.choices[0];
  const message = choice.message;
  const calls = (message.tool_calls ?? []).map((c) => ({
    id: c.id, name: c.function.name, arguments: JSON.parse(c.function.arguments) }));
  const u = completion.usage;
  const usage = u == null ? null : {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    cached_tokens: u.prompt_tokens_details?.cached_tokens ?? null,
    reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? null,
  };
  return {
    turn: { text: message.content ?? "", tool_calls: calls, stop: choice.finish_reason, usage,
      deltas, events: [...events].sort() },
    // The SDK's own way: the returned message object goes back as it is.
    echoed: [message],
    resultOf: (call, result) => ({ role: "tool", tool_call_id: call.id, content: result }),
  };
}

async function responsesTurn(client, a, input) {
  const body = { model: a.model, input, max_output_tokens: a.maxTokens, store: false,
    ...a.extra };
  if (a.tools) {
    body.tools = [{ type: "function", name: "write_file", description: TOOL_DESCRIPTION,
      parameters: TOOL_SCHEMA, strict: false }];
  }
  let deltas = 0;
  const events = new Set();
  let response;
  if (a.stream) {
    const stream = client.responses.stream(body);
    stream.on("event", (event) => events.add(event.type));
    stream.on("response.output_text.delta", () => deltas++);
    stream.on("response.function_call_arguments.delta", () => deltas++);
    response = await stream.finalResponse();
  } else {
    response = await client.responses.create(body);
  }
  const calls = response.output.filter((item) => item.type === "function_call").map((item) => ({
    id: item.call_id, name: item.name, arguments: JSON.parse(item.arguments) }));
  const u = response.usage;
  const usage = u == null ? null : {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cached_tokens: u.input_tokens_details?.cached_tokens ?? null,
    reasoning_tokens: u.output_tokens_details?.reasoning_tokens ?? null,
  };
  return {
    turn: { text: response.output_text, tool_calls: calls, stop: response.status, usage, deltas,
      events: [...events].sort() },
    // The SDK's own way: the output items go back as they are (store is false).
    echoed: response.output,
    resultOf: (call, result) => ({ type: "function_call_output", call_id: call.id,
      output: result }),
  };
}

async function messagesTurn(client, a, messages) {
  const body = { model: a.model, messages, max_tokens: a.maxTokens, ...a.extra };
  if (a.tools) {
    body.tools = [{ name: "write_file", description: TOOL_DESCRIPTION,
      input_schema: TOOL_SCHEMA }];
  }
  let deltas = 0;
  const events = new Set();
  let message;
  if (a.stream) {
    const stream = client.messages.stream(body);
    stream.on("streamEvent", (event) => {
      events.add(event.type);
      if (event.type === "content_block_delta") deltas++;
    });
    message = await stream.finalMessage();
  } else {
    message = await client.messages.create(body);
  }
  const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  const calls = message.content.filter((b) => b.type === "tool_use").map((b) => ({
    id: b.id, name: b.name, arguments: b.input }));
  const u = message.usage;
  const usage = {
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_input_tokens: u.cache_read_input_tokens ?? null,
    cache_creation_input_tokens: u.cache_creation_input_tokens ?? null,
  };
  const results = [];
  return {
    turn: { text, tool_calls: calls, stop: message.stop_reason, usage, deltas,
      events: [...events].sort() },
    // The SDK's own way: the returned content blocks go back as they are.
    echoed: [{ role: "assistant", content: message.content }],
    // Every result of one assistant turn goes into one user message.
    resultOf: (call, result) => {
      results.push({ type: "tool_result", tool_use_id: call.id, content: result });
      return null;
    },
    results,
  };
}

// GET /v1/models with both SDKs (the Anthropic one sends anthropic-version, so the gateway
// answers in Anthropic's list shape): the ids each read, every page.
async function listModels(require, origin) {
  const { default: OpenAI } = await import(require.resolve("openai"));
  const { default: Anthropic } = await import(require.resolve("@anthropic-ai/sdk"));
  const common = { maxRetries: 0, timeout: 60_000 };
  const o = new OpenAI({ apiKey: process.env.OPENAI_API_KEY, baseURL: `${origin}/v1`, ...common });
  const c = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, baseURL: origin, ...common });
  const ids = { openai: [], anthropic: [] };
  for await (const m of o.models.list()) ids.openai.push(m.id);
  for await (const m of c.models.list()) ids.anthropic.push(m.id);
  console.log(JSON.stringify(ids));
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const modules = process.env.SWITCHYARD_SDK_NODE_MODULES;
  if (!modules) throw new Error("SWITCHYARD_SDK_NODE_MODULES is not set");
  const require = createRequire(path.join(path.resolve(modules), "noop.js"));
  if (a.api === "models") return listModels(require, a.baseUrl);
  let client, sdk, version, turnFn;
  const common = { baseURL: a.baseUrl, maxRetries: 0, timeout: 60_000 };
  if (a.api === "messages") {
    const { default: Anthropic } = await import(require.resolve("@anthropic-ai/sdk"));
    client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, ...common });
    sdk = "@anthropic-ai/sdk";
    version = (await import(require.resolve("@anthropic-ai/sdk/version"))).VERSION;
    turnFn = messagesTurn;
  } else {
    const { default: OpenAI } = await import(require.resolve("openai"));
    client = new OpenAI({ apiKey: process.env.OPENAI_API_KEY, ...common });
    sdk = "openai";
    version = (await import(require.resolve("openai/version"))).VERSION;
    turnFn = a.api === "chat" ? chatTurn : responsesTurn;
  }
  const history = [{ role: "user", content: a.prompt }];
  const turns = [];
  const wrote = {};
  for (let i = 0; i < (a.tools ? 2 : 1); i++) {
    const { turn, echoed, resultOf, results } = await turnFn(client, a, history);
    turns.push(turn);
    if (turn.tool_calls.length === 0) break;
    history.push(...echoed);
    for (const call of turn.tool_calls) {
      const item = resultOf(call, writeFile(a.workdir, call.arguments, wrote));
      if (item !== null) history.push(item);
    }
    if (results) history.push({ role: "user", content: results });
  }
  console.log(JSON.stringify({ sdk, version, api: a.api, stream: a.stream, turns, wrote }));
}

main().catch((e) => {
  // The test prints this: the SDK's own error class, status and message.
  console.error(`${e?.constructor?.name ?? "Error"}: ${e?.status ?? ""} ${e?.message ?? e}`);
  process.exit(1);
});
