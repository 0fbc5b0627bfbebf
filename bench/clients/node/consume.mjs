// Consumes one stream with an official Node SDK and prints its counts as one JSON line.
//
//   node consume.mjs --sdk openai|anthropic --base-url URL --model ID
//
// Iterates the SDK's own stream object (`client.chat.completions.create({stream: true})`,
// `client.messages.create({stream: true})`), as Cline does, and counts the same logical
// content as the Rust client: non-empty text, reasoning and tool-argument deltas with their
// lengths (code points; the generated streams use BMP characters only), and usage reports.
// Also reports the stream's time and CPU time (`process.cpuUsage`, all threads) and the
// process's peak RSS (`VmHWM`).
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const sdk = opt('--sdk');
const baseURL = opt('--base-url');
const model = opt('--model');

const counts = {
  text: 0, text_chars: 0, reasoning: 0, reasoning_chars: 0,
  tool_args: 0, tool_args_chars: 0, usage: 0, output_tokens: 0,
};
const messages = [{ role: 'user', content: 'Benchmark request: stream the whole answer.' }];
let chunks = 0;
let firstTextMs = null;
let started;
let cpuBefore;

if (sdk === 'openai') {
  const client = new OpenAI({ apiKey: process.env.OPENAI_API_KEY, baseURL, maxRetries: 0 });
  started = performance.now();
  cpuBefore = process.cpuUsage();
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'system', content: 'You are a benchmark peer.' }, ...messages],
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) {
      counts.usage++;
      counts.output_tokens = chunk.usage.completion_tokens;
    }
    for (const choice of chunk.choices) {
      const delta = choice.delta;
      if (delta.content) {
        if (firstTextMs === null) firstTextMs = performance.now() - started;
        counts.text++;
        counts.text_chars += delta.content.length;
      }
      if (delta.tool_calls) {
        for (const call of delta.tool_calls) {
          const a = call.function?.arguments;
          if (a) {
            counts.tool_args++;
            counts.tool_args_chars += a.length;
          }
        }
      }
    }
  }
} else if (sdk === 'anthropic') {
  const client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, baseURL, maxRetries: 0 });
  started = performance.now();
  cpuBefore = process.cpuUsage();
  const stream = await client.messages.create({
    model,
    max_tokens: 64000,
    system: 'You are a benchmark peer.',
    messages,
    stream: true,
  });
  for await (const event of stream) {
    chunks++;
    if (event.type === 'content_block_delta') {
      const d = event.delta;
      if (d.type === 'text_delta' && d.text) {
        if (firstTextMs === null) firstTextMs = performance.now() - started;
        counts.text++;
        counts.text_chars += d.text.length;
      } else if (d.type === 'thinking_delta' && d.thinking) {
        counts.reasoning++;
        counts.reasoning_chars += d.thinking.length;
      } else if (d.type === 'input_json_delta' && d.partial_json) {
        counts.tool_args++;
        counts.tool_args_chars += d.partial_json.length;
      }
    } else if (event.type === 'message_delta') {
      counts.usage++;
      counts.output_tokens = event.usage.output_tokens;
    }
  }
} else {
  console.error('usage: node consume.mjs --sdk openai|anthropic --base-url URL --model ID');
  process.exit(2);
}
const streamMs = performance.now() - started;
const cpu = process.cpuUsage(cpuBefore);
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
const out = {
  client: `node-${sdk}`,
  stream_ms: streamMs,
  stream_cpu_ms: (cpu.user + cpu.system) / 1000,
  peak_rss_kb: hwm ? Number(hwm[1]) : null,
  first_text_ms: firstTextMs,
  chunks,
  counts,
};
process.stdout.write(JSON.stringify(out) + '\n');
